//! Receive packet steering for the interfaces the emulator reads: each flow
//! kept on one CPU in the order it was sent, and the host stack's receive
//! work kept off the emulator's pinned core. Plain file writes, no unsafe call.

/// Number of CPUs this process may run on.
pub fn online_cpus() -> usize {
    std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1)
}

/// The RPS mask "every online CPU but `avoid`", or None on a single-CPU machine.
pub fn rps_mask(avoid: Option<usize>) -> Option<String> {
    let n = online_cpus().min(64);
    if n < 2 {
        return None;
    }
    let all: u64 = if n == 64 { u64::MAX } else { (1u64 << n) - 1 };
    Some(format!("{:x}", all & !avoid.map_or(0, |a| 1u64 << a)))
}

/// Receive processing of `ifname` in named namespace `netns` (None: this
/// one) on every CPU but `avoid`: the host stack behind a veth then runs off
/// the emulator's core instead of inside the emulator's send(), since veth
/// delivers synchronously.
pub fn steer_rx_away_from(netns: Option<&str>, ifname: &str, avoid: usize) {
    if let Some(mask) = rps_mask(Some(avoid)) {
        set_rps(netns, ifname, &mask);
    }
}

/// Keep each flow's order into the emulator: without RPS a veth's frames
/// are filed on the CPU that sent them, so a sender that moves between CPUs
/// has two CPUs filing its frames at once, and a later super-frame can
/// reach the ring first (seen here at 2.4-9.6 Gbit/s: up to 270 reordering
/// events and 230 spurious retransmissions in 5 s). RPS queues each flow to
/// one CPU (by its hash, across every CPU but the emulator's pinned one), in
/// the order it was sent, and timestamps it before queueing.
pub fn keep_flow_order(netns: Option<&str>, ifname: &str, avoid: Option<usize>) {
    if let Some(mask) = rps_mask(avoid) {
        set_rps(netns, ifname, &mask);
    }
}

/// Write an interface's RPS CPU mask (best effort). `ip netns exec` mounts
/// the namespace's /sys for a named namespace; without one, this process's
/// /sys is its namespace's (it was started by `ip netns exec` or the node wrapper).
fn set_rps(netns: Option<&str>, ifname: &str, mask: &str) {
    let path = format!("/sys/class/net/{ifname}/queues/rx-0/rps_cpus");
    match netns {
        None => {
            let _ = std::fs::write(&path, mask);
        }
        Some(ns) => {
            use std::io::Write as _;
            if let Ok(mut child) = std::process::Command::new("ip")
                .args(["netns", "exec", ns, "tee", &path])
                .stdin(std::process::Stdio::piped())
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .spawn()
            {
                if let Some(mut stdin) = child.stdin.take() {
                    let _ = stdin.write_all(mask.as_bytes());
                }
                let _ = child.wait();
            }
        }
    }
}
