//! Every unsafe system call of the emulator, in one small module: AF_PACKET
//! sockets (af_packet.rs: TPACKET_V2 receive rings, and one sender per
//! namespace that transmits with sendmmsg), and here the monotonic clock, a
//! timerfd, epoll, signalfd, pidfd, CPU affinity, ethtool and
//! network-namespace switching. What needs no unsafe call lives elsewhere
//! (the checksum in gso.rs, receive steering in rps.rs). Each unsafe block
//! says why it is sound (SAFETY).
//!
//! Why AF_PACKET: the emulator sits between two interfaces as a layer-2 hop,
//! so no NAT, routes or TUN devices are needed; a receive ring hands over
//! frames without a system call, and sendmmsg gives the kernel a whole round
//! of departures, for every link, in one call (mm-link pays a read and a
//! write per packet through TUN, which is what caps it near 1.6 Gbit/s).

#![allow(unsafe_code)]

mod af_packet;

pub use af_packet::{PacketSocket, RxFrame, Sender};

use std::ffi::CString;
use std::io;
use std::os::fd::RawFd;
use std::sync::atomic::Ordering;

pub(super) fn cvt(r: libc::c_int, what: &str) -> io::Result<libc::c_int> {
    if r < 0 {
        let e = io::Error::last_os_error();
        Err(io::Error::new(e.kind(), format!("{what}: {e}")))
    } else {
        Ok(r)
    }
}


pub fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: ts is valid.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

pub fn realtime_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: ts is valid.
    unsafe { libc::clock_gettime(libc::CLOCK_REALTIME, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Ask for nanosecond timer precision instead of the default 50 us slack.
pub fn tight_timer_slack() {
    // SAFETY: prctl with integer arguments.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1, 0, 0, 0) };
}

/// Pin the calling thread to one CPU.
pub fn pin_to_cpu(cpu: usize) -> io::Result<()> {
    // SAFETY: a zeroed cpu_set_t with one bit set, passed by pointer.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if cpu >= 8 * std::mem::size_of::<libc::cpu_set_t>() {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, "CPU number out of range"));
        }
        libc::CPU_SET(cpu, &mut set);
        cvt(libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set), "sched_setaffinity").map(|_| ())
    }
}

pub struct TimerFd(pub RawFd);

impl TimerFd {
    pub fn new() -> io::Result<TimerFd> {
        // SAFETY: plain syscall.
        cvt(unsafe { libc::timerfd_create(libc::CLOCK_MONOTONIC, libc::TFD_NONBLOCK | libc::TFD_CLOEXEC) }, "timerfd_create").map(TimerFd)
    }
    /// Fire at absolute monotonic time `at_ns` (0 disarms).
    pub fn set(&self, at_ns: u64) {
        let its = libc::itimerspec {
            it_interval: libc::timespec { tv_sec: 0, tv_nsec: 0 },
            it_value: libc::timespec { tv_sec: (at_ns / 1_000_000_000) as i64, tv_nsec: (at_ns % 1_000_000_000) as i64 },
        };
        // SAFETY: its is valid.
        unsafe { libc::timerfd_settime(self.0, libc::TFD_TIMER_ABSTIME, &its, std::ptr::null_mut()) };
    }
    pub fn drain(&self) {
        let mut buf = [0u8; 8];
        // SAFETY: reading 8 bytes into buf.
        unsafe { libc::read(self.0, buf.as_mut_ptr() as *mut libc::c_void, 8) };
    }
}

impl Drop for TimerFd {
    fn drop(&mut self) {
        // SAFETY: the fd is this TimerFd's own, closed once, here.
        unsafe { libc::close(self.0) };
    }
}

pub struct Epoll(RawFd);

impl Epoll {
    pub fn new() -> io::Result<Epoll> {
        // SAFETY: an integer flag, no pointer.
        cvt(unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) }, "epoll_create1").map(Epoll)
    }
    pub fn add(&self, fd: RawFd, token: u64) -> io::Result<()> {
        let mut ev = libc::epoll_event { events: libc::EPOLLIN as u32, u64: token };
        // SAFETY: ev is a live epoll_event; the kernel copies it.
        cvt(unsafe { libc::epoll_ctl(self.0, libc::EPOLL_CTL_ADD, fd, &mut ev) }, "epoll_ctl").map(|_| ())
    }
    /// Turn readiness reporting for an added `fd` on or off.
    pub fn arm(&self, fd: RawFd, token: u64, on: bool) -> io::Result<()> {
        let mut ev = libc::epoll_event { events: if on { libc::EPOLLIN as u32 } else { 0 }, u64: token };
        // SAFETY: ev is a live epoll_event; the kernel copies it.
        cvt(unsafe { libc::epoll_ctl(self.0, libc::EPOLL_CTL_MOD, fd, &mut ev) }, "epoll_ctl").map(|_| ())
    }
    /// Wait for readiness; returns the tokens that fired.
    pub fn wait(&self, out: &mut Vec<u64>, timeout_ms: i32) {
        let mut evs = [libc::epoll_event { events: 0, u64: 0 }; 64];
        // SAFETY: the kernel writes at most evs.len() events into evs.
        let n = unsafe { libc::epoll_wait(self.0, evs.as_mut_ptr(), evs.len() as i32, timeout_ms) };
        out.clear();
        for e in evs.iter().take(n.max(0) as usize) {
            out.push(e.u64);
        }
    }
}

impl Drop for Epoll {
    fn drop(&mut self) {
        // SAFETY: the fd is this Epoll's own, closed once, here.
        unsafe { libc::close(self.0) };
    }
}

static STOP_SIGNAL: std::sync::atomic::AtomicI32 = std::sync::atomic::AtomicI32::new(0);

extern "C" fn on_stop_signal(sig: libc::c_int) {
    STOP_SIGNAL.store(sig, Ordering::SeqCst);
}

/// SIGINT/SIGTERM/SIGHUP set a flag that the loop checks between batches;
/// without SA_RESTART they also interrupt a sleeping epoll_wait at once.
pub fn install_stop_handler() {
    for s in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
        install_handler(s, on_stop_signal);
    }
}

/// `handler` for `sig`, without SA_RESTART (a sleeping epoll_wait returns).
/// Every handler here is async-signal-safe: it stores an atomic, reads the
/// clock or does nothing.
fn install_handler(sig: libc::c_int, handler: extern "C" fn(libc::c_int)) {
    // SAFETY: sa is zeroed plain data with its handler and an empty mask set before use.
    unsafe {
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = handler as usize;
        libc::sigemptyset(&mut sa.sa_mask);
        libc::sigaction(sig, &sa, std::ptr::null_mut());
    }
}

static RESTART_AT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

extern "C" fn on_restart_signal(_sig: libc::c_int) {
    // clock_gettime is async-signal-safe.
    RESTART_AT.store(monotonic_ns(), Ordering::SeqCst);
}

/// SIGUSR2 asks every link to start its trace over, from its first line, at
/// the instant the signal arrived: an experiment aligns the trace with its
/// measurement (the workload starts seconds after the emulator, after the
/// network checks and the model load, and the trace's phase must not depend
/// on how long those took). No SA_RESTART: a sleeping epoll_wait returns.
pub fn install_restart_handler() {
    install_handler(libc::SIGUSR2, on_restart_signal);
}

/// When the latest trace restart was asked for (CLOCK_MONOTONIC ns; 0: never).
pub fn trace_restart_at() -> u64 {
    RESTART_AT.load(Ordering::SeqCst)
}

static RESTART_SAID: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// True for the first forwarding thread to carry out the restart asked for
/// at `asked`: the process says so once, however many threads it has.
pub fn first_to_report_restart(asked: u64) -> bool {
    RESTART_SAID.swap(asked, Ordering::SeqCst) != asked
}

/// Ask every forwarding thread to stop, as a stop signal would (keeps a signal already seen).
pub fn request_stop() {
    let _ = STOP_SIGNAL.compare_exchange(0, libc::SIGTERM, Ordering::SeqCst, Ordering::SeqCst);
}

extern "C" fn on_wake_signal(_sig: libc::c_int) {}

/// SIGUSR1 only interrupts what it reaches (no SA_RESTART): a forwarding
/// thread's epoll_wait returns, and its loop sees a stop request.
pub fn install_wake_handler() {
    install_handler(libc::SIGUSR1, on_wake_signal);
}

/// Wake a forwarding thread from its wait (SIGUSR1, whose handler does nothing
/// but interrupt the wait: install_wake_handler).
pub fn wake_thread<T>(h: &std::thread::JoinHandle<T>) {
    use std::os::unix::thread::JoinHandleExt;
    if !h.is_finished() {
        // SAFETY: the thread has not been joined (we hold its handle), so its pthread_t is valid.
        unsafe { libc::pthread_kill(h.as_pthread_t(), libc::SIGUSR1) };
    }
}

/// `cmd` starts its program in the network namespace open at `ns_fd` (which
/// must stay open until the spawn).
pub fn spawn_in_netns(cmd: &mut std::process::Command, ns_fd: RawFd) {
    use std::os::unix::process::CommandExt;
    // SAFETY: setns is async-signal-safe, and the closure touches nothing else.
    unsafe {
        cmd.pre_exec(move || if libc::setns(ns_fd, libc::CLONE_NEWNET) == 0 { Ok(()) } else { Err(std::io::Error::last_os_error()) });
    }
}

/// Ask a child process to end (SIGTERM).
pub fn terminate(pid: u32) {
    // SAFETY: kill has no memory effects; a pid that is gone gives ESRCH, ignored.
    unsafe { libc::kill(pid as i32, libc::SIGTERM) };
}

/// Block the stop signals in this thread (threads started now inherit it); the old mask.
pub fn block_stop_signals() -> libc::sigset_t {
    // SAFETY: sigset_t is plain data, filled by sigemptyset/sigaddset before use.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        let mut old: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        for s in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
            libc::sigaddset(&mut set, s);
        }
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, &mut old);
        old
    }
}

pub fn restore_signals(old: libc::sigset_t) {
    // SAFETY: `old` came from pthread_sigmask.
    unsafe { libc::pthread_sigmask(libc::SIG_SETMASK, &old, std::ptr::null_mut()) };
}

/// The stop signal received so far, if any.
pub fn stop_signal() -> Option<i32> {
    match STOP_SIGNAL.load(Ordering::Relaxed) {
        0 => None,
        s => Some(s),
    }
}

pub fn pidfd_open(pid: u32) -> io::Result<RawFd> {
    // SAFETY: integer arguments only.
    let r = unsafe { libc::syscall(libc::SYS_pidfd_open, pid as libc::c_long, 0 as libc::c_long) };
    cvt(r as i32, "pidfd_open")
}

pub fn close(fd: RawFd) {
    // SAFETY: the caller hands over an fd it owns and no longer uses.
    unsafe { libc::close(fd) };
}

/// Run `f` with this thread inside the named network namespace
/// (/var/run/netns/NAME), then switch back. Sockets opened inside stay bound
/// to that namespace.
pub fn in_netns<T>(name: &str, f: impl FnOnce() -> io::Result<T>) -> io::Result<T> {
    let open = |p: &str| -> io::Result<RawFd> {
        let c = CString::new(p).expect("no NUL");
        // SAFETY: c is a NUL-terminated string that outlives the call.
        cvt(unsafe { libc::open(c.as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC) }, &format!("open {p}"))
    };
    let here = open("/proc/thread-self/ns/net")?;
    let there = match open(&format!("/var/run/netns/{name}")) {
        Ok(fd) => fd,
        Err(e) => {
            close(here);
            return Err(io::Error::new(io::ErrorKind::NotFound, format!("network namespace {name:?}: {e}")));
        }
    };
    // SAFETY: integer arguments; `there` is an open namespace fd. setns moves only this thread.
    let r = cvt(unsafe { libc::setns(there, libc::CLONE_NEWNET) }, &format!("setns {name}"));
    close(there);
    if let Err(e) = r {
        close(here);
        return Err(e);
    }
    let out = f();
    // SAFETY: integer arguments; `here` is this thread's own namespace, opened above.
    let back = cvt(unsafe { libc::setns(here, libc::CLONE_NEWNET) }, "setns back");
    close(here);
    back?;
    out
}

const SIOCETHTOOL: libc::c_ulong = 0x8946;

/// Turn a boolean ethtool feature (ETHTOOL_S* command) on or off; errors
/// ignored by callers where a device simply lacks the feature.
pub fn ethtool_set(ifname: &str, cmd: u32, on: bool) -> io::Result<()> {
    #[repr(C)]
    struct EthtoolValue {
        cmd: u32,
        data: u32,
    }
    #[repr(C)]
    struct IfReq {
        name: [u8; 16],
        data: *mut EthtoolValue,
        _pad: [u8; 16],
    }
    let mut val = EthtoolValue { cmd, data: on as u32 };
    let mut req = IfReq { name: [0; 16], data: &mut val, _pad: [0; 16] };
    let n = ifname.as_bytes();
    if n.len() >= 16 {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, "interface name too long"));
    }
    req.name[..n.len()].copy_from_slice(n);
    // SAFETY: integer arguments only.
    let fd = cvt(unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) }, "socket")?;
    // SAFETY: req is a live ifreq whose data points at val, both alive until the call returns.
    let r = unsafe { libc::ioctl(fd, SIOCETHTOOL as _, &mut req) };
    close(fd);
    cvt(r, &format!("ethtool {ifname}")).map(|_| ())
}

/// Segmentation and receive offloads off, so the emulator sees MTU-sized frames.
pub fn disable_offloads(ifname: &str) {
    for c in [ETHTOOL_STSO, ETHTOOL_SGSO, ETHTOOL_SGRO, ETHTOOL_STXCSUM] {
        let _ = ethtool_set(ifname, c, false);
    }
}

/// Checksum, scatter-gather and segmentation offload on (receive offload off),
/// so super-frames the emulator sends leave whole toward the receiving stack.
pub fn enable_tx_offloads(ifname: &str) {
    for c in [ETHTOOL_STXCSUM, ETHTOOL_SSG, ETHTOOL_STSO, ETHTOOL_SGSO] {
        let _ = ethtool_set(ifname, c, true);
    }
    let _ = ethtool_set(ifname, ETHTOOL_SGRO, false);
}

const ETHTOOL_STXCSUM: u32 = 0x17;
const ETHTOOL_SSG: u32 = 0x19;
const ETHTOOL_STSO: u32 = 0x1f;
const ETHTOOL_SGSO: u32 = 0x24;
const ETHTOOL_SGRO: u32 = 0x2c;
