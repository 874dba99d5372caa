//! The CPU one sleep-and-wake costs on this machine, through the same timerfd
//! and epoll calls the forwarding loop sleeps on. It is the floor under the
//! emulator's CPU at low rates: a loop that wakes once per millisecond costs
//! 1000 times this per second before it forwards a single packet.
//!
//!     cargo run --release --example wakeup_cost [PERIOD_US] [SECONDS]

use mahimahi_link::sys::{monotonic_ns, tight_timer_slack, Epoll, TimerFd};

fn cpu_s() -> f64 {
    // SAFETY: getrusage fills the struct we pass.
    let mut r: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut r) };
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    tv(r.ru_utime) + tv(r.ru_stime)
}

fn main() {
    let args: Vec<u64> = std::env::args().skip(1).map(|a| a.parse().expect("PERIOD_US and SECONDS are integers")).collect();
    let period_ns = args.first().copied().unwrap_or(1000) * 1000;
    let seconds = args.get(1).copied().unwrap_or(3);
    tight_timer_slack();
    let timer = TimerFd::new().expect("timerfd");
    let epoll = Epoll::new().expect("epoll");
    epoll.add(timer.0, 0).expect("epoll add");
    let n = seconds * 1_000_000_000 / period_ns;
    let (c0, t0) = (cpu_s(), monotonic_ns());
    let mut fired = Vec::new();
    for i in 1..=n {
        timer.set(t0 + i * period_ns);
        epoll.wait(&mut fired, -1);
        timer.drain();
    }
    let cpu = cpu_s() - c0;
    let wall = (monotonic_ns() - t0) as f64 / 1e9;
    println!(
        "{n} wakeups every {} us: {:.1} us of CPU per wakeup, {:.1}% of one core",
        period_ns / 1000,
        cpu / n as f64 * 1e6,
        100.0 * cpu / wall
    );
}
