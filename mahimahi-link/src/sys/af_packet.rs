//! AF_PACKET sockets: a TPACKET_V2 receive ring per interface (a second one
//! for frames larger than a slot, joined by a fanout), and one sender per
//! network namespace that transmits a round of departures with sendmmsg.

#![allow(unsafe_code)]

use std::ffi::CString;
use std::io;
use std::os::fd::RawFd;
use std::sync::atomic::{AtomicU32, Ordering};

use super::cvt;
use crate::gso::{Vnet, VNET_HDR_LEN};

const SOL_PACKET: i32 = 263;
const PACKET_ADD_MEMBERSHIP: i32 = 1;
const PACKET_RX_RING: i32 = 5;
const PACKET_STATISTICS: i32 = 6;
const PACKET_VERSION: i32 = 10;
const PACKET_QDISC_BYPASS: i32 = 20;
const PACKET_IGNORE_OUTGOING: i32 = 23;
const PACKET_VNET_HDR: i32 = 15;
const PACKET_FANOUT: i32 = 18;
const PACKET_FANOUT_DATA: i32 = 22;
const PACKET_FANOUT_CBPF: u32 = 6;
const PACKET_FANOUT_FLAG_UNIQUEID: u32 = 0x2000;
const PACKET_FANOUT_FLAG_IGNORE_OUTGOING: u32 = 0x4000;
const PACKET_MR_PROMISC: u16 = 1;
const TPACKET_V2: i32 = 1;
const TP_STATUS_USER: u32 = 1;
const TP_STATUS_CSUMNOTREADY: u32 = 8;
const ETH_P_ALL: u16 = 0x0003;

#[repr(C)]
struct TpacketReq {
    block_size: u32,
    block_nr: u32,
    frame_size: u32,
    frame_nr: u32,
}

#[repr(C)]
struct Tpacket2Hdr {
    status: u32,
    len: u32,
    snaplen: u32,
    mac: u16,
    net: u16,
    sec: u32,
    nsec: u32,
    vlan_tci: u16,
    vlan_tpid: u16,
    padding: [u8; 4],
}

fn setsockopt<T>(fd: RawFd, level: i32, name: i32, val: &T, what: &str) -> io::Result<()> {
    // SAFETY: val points to a live T of the given size.
    let r = unsafe { libc::setsockopt(fd, level, name, val as *const T as *const libc::c_void, std::mem::size_of::<T>() as u32) };
    cvt(r, what).map(|_| ())
}

pub fn ifindex(name: &str) -> io::Result<i32> {
    let c = CString::new(name).map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "interface name has a NUL byte"))?;
    // SAFETY: c is a valid C string.
    let i = unsafe { libc::if_nametoindex(c.as_ptr()) };
    if i == 0 {
        Err(io::Error::new(io::ErrorKind::NotFound, format!("no network interface named {name:?} in this namespace")))
    } else {
        Ok(i as i32)
    }
}

/// A frame received from a ring slot; release it with [`PacketSocket::rx_release`].
pub struct RxFrame<'a> {
    pub data: &'a mut [u8],
    /// The frame was longer than the slot (segmentation offload still on at the sender).
    pub truncated_from: Option<u32>,
    /// The sender left the transport checksum for hardware to fill in.
    pub csum_not_ready: bool,
    /// Kernel receive time, CLOCK_REALTIME nanoseconds (0 if unknown).
    pub ts_real_ns: u64,
    /// The virtio-net header (sockets opened with `gso`).
    pub vnet: Option<Vnet>,
}

/// One AF_PACKET socket on an interface with an mmap'ed TPACKET_V2 receive ring.
struct Ring {
    fd: RawFd,
    ring: *mut u8,
    ring_len: usize,
    frame_size: usize,
    block_size: usize,
    frames_per_block: usize,
    /// Frames carry a virtio-net header (TCP super-frames taken whole).
    vnet: bool,
    frames: usize,
    next: usize,
}

impl Ring {
    /// `large`: 68 KiB slots for 64 KiB super-frames (1 MiB blocks of 15);
    /// otherwise 2 KiB slots (64 KiB blocks of 32), a power of two of them.
    fn open(idx: i32, frames: usize, large: bool, vnet: bool) -> io::Result<Ring> {
        // SAFETY: plain socket call.
        let fd = cvt(unsafe { libc::socket(libc::AF_PACKET, libc::SOCK_RAW | libc::SOCK_CLOEXEC | libc::SOCK_NONBLOCK, (ETH_P_ALL.to_be()) as i32) }, "socket(AF_PACKET)")?;
        let (frame_size, per_block, block_size) = if large { (69_632usize, 15usize, 1usize << 20) } else { (2048, 32, 65_536) };
        let mut r = Ring { fd, ring: std::ptr::null_mut(), ring_len: 0, frame_size, block_size, frames_per_block: per_block, vnet, frames: 0, next: 0 };
        setsockopt(fd, SOL_PACKET, PACKET_VERSION, &TPACKET_V2, "PACKET_VERSION")?;
        let one: i32 = 1;
        setsockopt(fd, SOL_PACKET, PACKET_IGNORE_OUTGOING, &one, "PACKET_IGNORE_OUTGOING")?;
        if vnet {
            setsockopt(fd, SOL_PACKET, PACKET_VNET_HDR, &one, "PACKET_VNET_HDR")?;
        }
        let blocks = if large { frames.div_ceil(per_block).max(2) } else { frames.next_power_of_two().max(64) / per_block };
        r.frames = blocks * per_block;
        let req = TpacketReq { block_size: block_size as u32, block_nr: blocks as u32, frame_size: frame_size as u32, frame_nr: r.frames as u32 };
        setsockopt(fd, SOL_PACKET, PACKET_RX_RING, &req, "PACKET_RX_RING")?;
        r.ring_len = blocks * block_size;
        // SAFETY: mapping the ring the kernel just allocated for fd.
        let p = unsafe { libc::mmap(std::ptr::null_mut(), r.ring_len, libc::PROT_READ | libc::PROT_WRITE, libc::MAP_SHARED | libc::MAP_LOCKED | libc::MAP_POPULATE, fd, 0) };
        let p = if p == libc::MAP_FAILED {
            // MAP_LOCKED can fail under a small RLIMIT_MEMLOCK; the rings are kernel memory anyway.
            // SAFETY: as above.
            unsafe { libc::mmap(std::ptr::null_mut(), r.ring_len, libc::PROT_READ | libc::PROT_WRITE, libc::MAP_SHARED, fd, 0) }
        } else {
            p
        };
        if p == libc::MAP_FAILED {
            return Err(io::Error::other(format!("mmap packet ring: {}", io::Error::last_os_error())));
        }
        r.ring = p as *mut u8;
        // SAFETY: packet_mreq is plain integers: all zero is a valid value.
        let mut mr: libc::packet_mreq = unsafe { std::mem::zeroed() };
        mr.mr_ifindex = idx;
        mr.mr_type = PACKET_MR_PROMISC;
        setsockopt(fd, SOL_PACKET, PACKET_ADD_MEMBERSHIP, &mr, "PACKET_ADD_MEMBERSHIP promisc")?;
        // SAFETY: sockaddr_ll is plain integers and bytes: all zero is a valid value.
        let mut sll: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
        sll.sll_family = libc::AF_PACKET as u16;
        sll.sll_protocol = ETH_P_ALL.to_be();
        sll.sll_ifindex = idx;
        // SAFETY: sll is a valid sockaddr_ll.
        cvt(unsafe { libc::bind(fd, &sll as *const _ as *const libc::sockaddr, std::mem::size_of::<libc::sockaddr_ll>() as u32) }, "bind(AF_PACKET)")?;
        Ok(r)
    }

    fn slot(&self, i: usize) -> *mut u8 {
        let at = (i / self.frames_per_block) * self.block_size + (i % self.frames_per_block) * self.frame_size;
        // SAFETY: i < frames, within the mapping.
        unsafe { self.ring.add(at) }
    }

    fn status(slot: *mut u8) -> &'static AtomicU32 {
        // SAFETY: the first u32 of a slot is tp_status, shared with the kernel.
        unsafe { &*(slot as *const AtomicU32) }
    }

    /// The kernel receive time of the next frame, if there is one.
    fn ready_at(&self) -> Option<u64> {
        let slot = self.slot(self.next);
        if Self::status(slot).load(Ordering::Acquire) & TP_STATUS_USER == 0 {
            return None;
        }
        // SAFETY: the kernel handed this slot to us (TP_STATUS_USER).
        let hdr = unsafe { &*(slot as *const Tpacket2Hdr) };
        Some(hdr.sec as u64 * 1_000_000_000 + hdr.nsec as u64)
    }

    fn peek(&mut self) -> Option<RxFrame<'_>> {
        let slot = self.slot(self.next);
        let st = Self::status(slot).load(Ordering::Acquire);
        if st & TP_STATUS_USER == 0 {
            return None;
        }
        // SAFETY: the kernel handed this slot to us (TP_STATUS_USER).
        let hdr = unsafe { &*(slot as *const Tpacket2Hdr) };
        // SAFETY: the kernel wrote snaplen bytes at mac within the slot, ours until rx_release.
        let data = unsafe { std::slice::from_raw_parts_mut(slot.add(hdr.mac as usize), hdr.snaplen as usize) };
        let truncated_from = (hdr.len > hdr.snaplen).then_some(hdr.len);
        let ts_real_ns = hdr.sec as u64 * 1_000_000_000 + hdr.nsec as u64;
        // The kernel puts the virtio-net header right before the frame.
        // SAFETY: mac >= VNET_HDR_LEN, so the header's bytes lie inside the slot, before the frame.
        let vnet = (self.vnet && truncated_from.is_none() && hdr.mac as usize >= VNET_HDR_LEN)
            .then(|| Vnet::read(unsafe { std::slice::from_raw_parts(slot.add(hdr.mac as usize - VNET_HDR_LEN), VNET_HDR_LEN) }));
        Some(RxFrame { data, truncated_from, csum_not_ready: st & TP_STATUS_CSUMNOTREADY != 0, ts_real_ns, vnet })
    }

    fn release(&mut self) {
        Self::status(self.slot(self.next)).store(0, Ordering::Release);
        self.next = (self.next + 1) % self.frames;
    }

    /// Discard every frame waiting in the ring.
    fn discard(&mut self) {
        while self.ready_at().is_some() {
            self.release();
        }
    }

    /// Frames dropped because the ring was full since the last call (the
    /// kernel resets its counters when read).
    fn take_drops(&self) -> u64 {
        let mut st = [0u32; 2]; // struct tpacket_stats: tp_packets, tp_drops
        let mut len = std::mem::size_of_val(&st) as libc::socklen_t;
        // SAFETY: st has room for the struct tpacket_stats a TPACKET_V2 socket returns.
        let r = unsafe { libc::getsockopt(self.fd, SOL_PACKET, PACKET_STATISTICS, st.as_mut_ptr() as *mut libc::c_void, &mut len) };
        if r == 0 { st[1] as u64 } else { 0 }
    }
}

impl Drop for Ring {
    fn drop(&mut self) {
        // SAFETY: unmapping our own mapping and closing our own fd.
        unsafe {
            if !self.ring.is_null() {
                libc::munmap(self.ring as *mut libc::c_void, self.ring_len);
            }
            libc::close(self.fd);
        }
    }
}

/// Frames longer than this (the IP packet, as the fanout filter sees it) go
/// to the super-frame ring; a 2 KiB slot holds 1958 bytes after the
/// TPACKET_V2 header, the link-layer header and the virtio-net header.
const LARGE_FRAME: u32 = 1900;

/// What an interface receives, through one receive ring, or with `gso`
/// through two: a fanout group whose classic BPF filter sends frames by
/// length to a ring of 2 KiB slots (MTU frames, thousands of them) or to one
/// of 68 KiB slots (TCP super-frames, a few dozen). One ring of 68 KiB slots
/// for everything was overrun by MTU-sized UDP at 0.6-1.2 Gbit/s whenever
/// the emulator was descheduled for a millisecond or two, and thousands of
/// 68 KiB slots would cost hundreds of MB per link. Frames are read back in
/// kernel-timestamp order across the two rings.
pub struct PacketSocket {
    pub name: String,
    /// The interface's index, the address a [`Sender`] sends to.
    pub ifindex: i32,
    /// Whether the forwarding loop's epoll reports frames arriving here.
    pub rx_armed: bool,
    rings: Vec<Ring>,
    /// The ring the last peeked frame came from.
    cur: usize,
}

impl PacketSocket {
    /// Open on interface `name` in the current network namespace, with
    /// `frames` MTU-frame slots; with `gso`, frames carry a virtio-net header
    /// and `large_frames` 68 KiB slots take super-frames.
    pub fn open(name: &str, frames: usize, gso: bool, large_frames: usize) -> io::Result<PacketSocket> {
        let idx = ifindex(name)?;
        let mut rings = vec![Ring::open(idx, frames, false, gso)?];
        if gso {
            // The group is made by the MTU ring alone, so that nothing is lost
            // while the second ring joins; with no filter yet, all goes to it.
            // (Outgoing frames are ignored by the group, as by a lone ring.)
            let uniq = ((PACKET_FANOUT_CBPF | PACKET_FANOUT_FLAG_UNIQUEID | PACKET_FANOUT_FLAG_IGNORE_OUTGOING) as i32) << 16;
            setsockopt(rings[0].fd, SOL_PACKET, PACKET_FANOUT, &uniq, "PACKET_FANOUT")?;
            let mut arg: i32 = 0;
            let mut len = std::mem::size_of::<i32>() as libc::socklen_t;
            // SAFETY: arg has room for the int PACKET_FANOUT returns.
            cvt(unsafe { libc::getsockopt(rings[0].fd, SOL_PACKET, PACKET_FANOUT, &mut arg as *mut i32 as *mut libc::c_void, &mut len) }, "getsockopt(PACKET_FANOUT)")?;
            let mut large = Ring::open(idx, large_frames, true, true)?;
            let join = ((PACKET_FANOUT_CBPF | PACKET_FANOUT_FLAG_IGNORE_OUTGOING) as i32) << 16 | (arg & 0xffff);
            setsockopt(large.fd, SOL_PACKET, PACKET_FANOUT, &join, "PACKET_FANOUT join")?;
            // Until it joined, the second ring got its own copy of every frame
            // the group also got: duplicates.
            large.discard();
            let prog = [
                libc::sock_filter { code: (libc::BPF_LD | libc::BPF_W | libc::BPF_LEN) as u16, jt: 0, jf: 0, k: 0 },
                libc::sock_filter { code: (libc::BPF_JMP | libc::BPF_JGT | libc::BPF_K) as u16, jt: 0, jf: 1, k: LARGE_FRAME },
                libc::sock_filter { code: (libc::BPF_RET | libc::BPF_K) as u16, jt: 0, jf: 0, k: 1 },
                libc::sock_filter { code: (libc::BPF_RET | libc::BPF_K) as u16, jt: 0, jf: 0, k: 0 },
            ];
            let fprog = libc::sock_fprog { len: prog.len() as u16, filter: prog.as_ptr() as *mut libc::sock_filter };
            setsockopt(rings[0].fd, SOL_PACKET, PACKET_FANOUT_DATA, &fprog, "PACKET_FANOUT_DATA")?;
            rings.push(large);
        }
        Ok(PacketSocket { name: name.to_string(), ifindex: idx, rx_armed: true, rings, cur: 0 })
    }

    /// The file descriptors that become readable when frames arrive.
    pub fn fds(&self) -> Vec<RawFd> {
        self.rings.iter().map(|r| r.fd).collect()
    }

    /// The next received frame, if any (the earliest across the rings).
    pub fn rx_peek(&mut self) -> Option<RxFrame<'_>> {
        if self.rings.len() > 1 {
            let mut best: Option<(u64, usize)> = None;
            for (i, r) in self.rings.iter().enumerate() {
                if let Some(t) = r.ready_at() {
                    if best.is_none_or(|(bt, _)| t < bt) {
                        best = Some((t, i));
                    }
                }
            }
            self.cur = best?.1;
        }
        self.rings[self.cur].peek()
    }

    /// Release the frame [`rx_peek`](Self::rx_peek) returned.
    pub fn rx_release(&mut self) {
        self.rings[self.cur].release();
    }

    /// Slots for MTU-sized frames.
    pub fn rx_slots(&self) -> usize {
        self.rings[0].frames
    }

    /// Frames the kernel dropped because a receive ring was full, since the
    /// last call.
    pub fn take_ring_drops(&self) -> u64 {
        self.rings.iter().map(|r| r.take_drops()).sum()
    }
}

/// A frame waiting in a [`Sender`]: its interface, its virtio-net header
/// (used by senders opened with `vnet`), its bytes, and the caller's tag.
struct Outgoing {
    ifindex: i32,
    vnet: [u8; VNET_HDR_LEN],
    data: Vec<u8>,
    tag: u32,
}

/// Frames kept for a retry when the kernel is out of buffer space; more are
/// refused (counted by the caller) rather than held without bound.
const SENDER_BACKLOG: usize = 65_536;
/// sendmmsg takes at most UIO_MAXIOV messages per call.
const MMSG_MAX: usize = 1024;

/// One unbound raw socket that transmits to any interface of its network
/// namespace, a whole round of frames per sendmmsg call.
///
/// Why not a TX ring per interface: a ring is kicked with one system call per
/// interface, and with many links each holding a frame or two per round that
/// is a call per frame. Worse, each kick makes the receiving namespace's CPU
/// (RPS) take an inter-processor interrupt when it has gone idle since the
/// last kick, and an IPI is a VM exit: ~20 us of the sender's CPU here.
/// Frames sent back to back in one call reach the receiver while it is still
/// busy with the first. The socket is bound to no protocol, so it receives
/// nothing.
pub struct Sender {
    fd: RawFd,
    vnet: bool,
    out: Vec<Outgoing>,
    addrs: Vec<libc::sockaddr_ll>,
    iovs: Vec<[libc::iovec; 2]>,
    hdrs: Vec<libc::mmsghdr>,
}

impl Sender {
    /// Open in the current network namespace; with `vnet`, every frame goes
    /// with its virtio-net header (segmentation offload).
    pub fn open(vnet: bool) -> io::Result<Sender> {
        // SAFETY: plain socket call.
        let fd = cvt(unsafe { libc::socket(libc::AF_PACKET, libc::SOCK_RAW | libc::SOCK_CLOEXEC | libc::SOCK_NONBLOCK, 0) }, "socket(AF_PACKET)")?;
        let s = Sender { fd, vnet, out: Vec::new(), addrs: Vec::new(), iovs: Vec::new(), hdrs: Vec::new() };
        let one: i32 = 1;
        setsockopt(fd, SOL_PACKET, PACKET_QDISC_BYPASS, &one, "PACKET_QDISC_BYPASS")?;
        if vnet {
            setsockopt(fd, SOL_PACKET, PACKET_VNET_HDR, &one, "PACKET_VNET_HDR")?;
        }
        // Room for a large round; veth releases each frame's buffer as it
        // forwards it, so this is rarely held for long. Best effort.
        let _ = setsockopt(fd, libc::SOL_SOCKET, libc::SO_SNDBUFFORCE, &(16i32 << 20), "SO_SNDBUFFORCE");
        Ok(s)
    }

    /// Queue a frame for interface `ifindex`; false (not queued) when too
    /// many frames already wait for buffer space.
    pub fn push(&mut self, ifindex: i32, vnet: &Vnet, data: Vec<u8>, tag: u32) -> bool {
        if self.out.len() >= SENDER_BACKLOG {
            return false;
        }
        let mut hdr = [0u8; VNET_HDR_LEN];
        vnet.write(&mut hdr);
        self.out.push(Outgoing { ifindex, vnet: hdr, data, tag });
        true
    }

    pub fn pending(&self) -> usize {
        self.out.len()
    }

    /// Hand queued frames to the kernel, in order. A frame the kernel
    /// refuses for good (its interface is gone or down, it is too long for
    /// it) is dropped and reported to `refused` with its tag; when buffer
    /// space runs out the rest stay queued. Returns whether all were sent.
    pub fn flush(&mut self, mut refused: impl FnMut(u32, &io::Error)) -> bool {
        let mut done = 0;
        while done < self.out.len() {
            let n = (self.out.len() - done).min(MMSG_MAX);
            self.addrs.clear();
            self.iovs.clear();
            self.hdrs.clear();
            for o in &self.out[done..done + n] {
                // SAFETY: all-zero is a valid sockaddr_ll.
                let mut a: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
                a.sll_family = libc::AF_PACKET as u16;
                // The frame's own EtherType (already in network byte order).
                a.sll_protocol = o.data.get(12..14).map_or(0, |b| u16::from_ne_bytes([b[0], b[1]]));
                a.sll_ifindex = o.ifindex;
                self.addrs.push(a);
                let skip = if self.vnet { 0 } else { VNET_HDR_LEN };
                self.iovs.push([
                    libc::iovec { iov_base: o.vnet[skip..].as_ptr() as *mut libc::c_void, iov_len: VNET_HDR_LEN - skip },
                    libc::iovec { iov_base: o.data.as_ptr() as *mut libc::c_void, iov_len: o.data.len() },
                ]);
            }
            for i in 0..n {
                // SAFETY: all-zero is a valid mmsghdr; the pointers below stay valid
                // until sendmmsg returns (the vectors are not touched meanwhile).
                let mut h: libc::mmsghdr = unsafe { std::mem::zeroed() };
                h.msg_hdr.msg_name = &mut self.addrs[i] as *mut libc::sockaddr_ll as *mut libc::c_void;
                h.msg_hdr.msg_namelen = std::mem::size_of::<libc::sockaddr_ll>() as u32;
                h.msg_hdr.msg_iov = self.iovs[i].as_mut_ptr();
                h.msg_hdr.msg_iovlen = 2;
                self.hdrs.push(h);
            }
            // SAFETY: hdrs holds n initialised headers pointing at live buffers.
            let r = unsafe { libc::sendmmsg(self.fd, self.hdrs.as_mut_ptr(), n as u32, libc::MSG_DONTWAIT) };
            if r > 0 {
                done += r as usize;
                continue;
            }
            let e = io::Error::last_os_error();
            match e.raw_os_error() {
                Some(libc::EAGAIN) | Some(libc::ENOBUFS) | Some(libc::EINTR) => break,
                _ => {
                    refused(self.out[done].tag, &e);
                    done += 1;
                }
            }
        }
        self.out.drain(..done);
        self.out.is_empty()
    }
}

impl Drop for Sender {
    fn drop(&mut self) {
        self.flush(|_, _| {});
        // SAFETY: closing our own fd.
        unsafe { libc::close(self.fd) };
    }
}

