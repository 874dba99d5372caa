//! Several forwarding threads (--threads): the links dealt out, one forwarder
//! each, a shared statistics file, and the stop carried to every thread.

use super::{CellSpec, ForwardConfig, Forwarder, Stop};
use crate::sys;
use std::sync::{Arc, Mutex};

/// The statistics file of several forwarding threads: each thread puts its
/// links' entries here and writes the whole document, once every link has one.
pub struct StatsShare {
    inner: Mutex<(f64, Vec<String>)>,
}

impl StatsShare {
    pub fn new(links: usize) -> StatsShare {
        StatsShare { inner: Mutex::new((0.0, vec![String::new(); links])) }
    }

    /// The document with these entries in, stamped with the latest time any
    /// thread reported (None until every link has an entry).
    pub(super) fn compose(&self, time_s: f64, ids: &[usize], entries: Vec<String>) -> Option<String> {
        let mut g = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        g.0 = g.0.max(time_s);
        for (&k, e) in ids.iter().zip(entries) {
            g.1[k] = e;
        }
        if g.1.iter().any(String::is_empty) {
            return None;
        }
        Some(format!("{{\"time_s\": {:.6}, \"links\": [{}]}}\n", g.0, g.1.join(", ")))
    }
}

/// Deal the links of `cfg` out to at most `threads` forwarders: a shared
/// cell's members all go to the first (the cell schedules them together),
/// every other link to the one serving the fewest. Each config keeps only
/// its links, with their global indices, and the cells only where their
/// members are; all share one statistics file.
pub fn split(cfg: ForwardConfig, threads: usize) -> Vec<ForwardConfig> {
    let n = cfg.links.len();
    let threads = threads.clamp(1, n.max(1));
    if threads == 1 {
        return vec![cfg];
    }
    let mut in_cell = vec![false; n];
    for spec in cfg.cells.iter().flatten() {
        for &m in &spec.members {
            in_cell[m] = true;
        }
    }
    let mut groups: Vec<Vec<usize>> = vec![Vec::new(); threads];
    groups[0] = (0..n).filter(|&i| in_cell[i]).collect();
    for i in (0..n).filter(|&i| !in_cell[i]) {
        let g = (0..threads).min_by_key(|&g| (groups[g].len(), g)).expect("threads >= 1");
        groups[g].push(i);
    }
    let share = Arc::new(StatsShare::new(n));
    groups
        .into_iter()
        .filter(|g| !g.is_empty())
        .enumerate()
        .map(|(k, ids)| {
            let local = |global: usize| ids.iter().position(|&i| i == global);
            let cells = [0, 1].map(|d| {
                cfg.cells[d].as_ref().filter(|c| c.members.iter().all(|&m| local(m).is_some())).map(|c| CellSpec {
                    members: c.members.iter().filter_map(|&m| local(m)).collect(),
                    ..c.clone()
                })
            });
            ForwardConfig {
                links: ids.iter().map(|&i| cfg.links[i].clone()).collect(),
                cells,
                cpu: cfg.cpu.map(|c| c + k),
                stats_share: cfg.stats_path.as_ref().map(|_| share.clone()),
                link_ids: ids,
                ..cfg.clone()
            }
        })
        .collect()
}

/// Run the forwarders of [`split`], one thread each, until a stop signal or
/// until all of them end (`--once`); an error in one stops them all. The
/// threads block the stop signals, which reach this (main) thread; it wakes
/// them with SIGUSR1 (no SA_RESTART: a sleeping epoll_wait returns).
pub fn run_threads(cfgs: Vec<ForwardConfig>) -> Result<Stop, String> {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::{mpsc, Barrier};
    sys::install_wake_handler();
    let n = cfgs.len();
    let repeat = cfgs.first().is_some_and(|c| c.link_opts.repeat);
    let go = Arc::new(AtomicBool::new(true));
    let barrier = Arc::new(Barrier::new(n + 1));
    let (opened_tx, opened_rx) = mpsc::channel::<Result<(), String>>();
    let blocked = sys::block_stop_signals();
    let mut handles = Vec::new();
    for (k, cfg) in cfgs.into_iter().enumerate() {
        let (go, barrier, opened) = (go.clone(), barrier.clone(), opened_tx.clone());
        let h = std::thread::Builder::new().name(format!("mml-fwd-{k}")).spawn(move || -> Result<Stop, String> {
            let fwd = Forwarder::open(cfg);
            let _ = opened.send(fwd.as_ref().map(|_| ()).map_err(Clone::clone));
            drop(opened);
            barrier.wait();
            match fwd {
                Ok(mut f) if go.load(Ordering::SeqCst) => f.run(None),
                _ => Ok(Stop::Signal(0)),
            }
        });
        match h {
            Ok(h) => handles.push(h),
            Err(e) => {
                sys::restore_signals(blocked);
                return Err(format!("--threads: cannot start forwarding thread {k}: {e}"));
            }
        }
    }
    drop(opened_tx);
    sys::restore_signals(blocked);
    let errors: Vec<String> = opened_rx.iter().take(handles.len()).filter_map(Result::err).collect();
    if !errors.is_empty() {
        go.store(false, Ordering::SeqCst);
    }
    barrier.wait();
    let mut stopping = !errors.is_empty();
    while handles.iter().any(|h| !h.is_finished()) {
        // Looping traces end a thread only on a stop or an error: then all stop.
        stopping |= sys::stop_signal().is_some() || (repeat && handles.iter().any(|h| h.is_finished()));
        if stopping {
            sys::request_stop();
            for h in &handles {
                sys::wake_thread(h);
            }
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let mut stop = Stop::TracesEnded;
    let mut errors = errors;
    for h in handles {
        match h.join() {
            Ok(Ok(Stop::TracesEnded)) => {}
            Ok(Ok(s)) => stop = s,
            Ok(Err(e)) => errors.push(e),
            Err(_) => errors.push("a forwarding thread panicked".into()),
        }
    }
    if let Some(sig) = sys::stop_signal() {
        stop = Stop::Signal(sig);
    }
    if errors.is_empty() { Ok(stop) } else { Err(errors.join("; ")) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::forward::{DirSpec, LinkSpec};
    use crate::link::LinkOptions;
    use crate::queue::QueueConfig;
    use crate::trace::Trace;

    fn trace_with(per_ms: usize, ms: u64) -> Trace {
        let text: String = (1..=ms).flat_map(|t| std::iter::repeat_n(format!("{t}\n"), per_ms)).collect();
        Trace::parse("t", &text).unwrap()
    }

    fn config_with(links: usize, cell_members: Option<Vec<usize>>) -> ForwardConfig {
        let dir = DirSpec { trace: Arc::new(trace_with(1, 1)), trace_path: "t".into(), queue: QueueConfig::default(), log_path: None, loss: 0.0, light: None, radio: None };
        let link = |i: usize| LinkSpec { name: format!("l{i}"), ue_if: format!("u{i}"), core_if: format!("c{i}"), netns: None, up: dir.clone(), down: dir.clone() };
        let cell = cell_members.map(|members| CellSpec {
            cfg: crate::cell::CellConfig::default(), sites: vec![crate::forward::Site { name: "cell".into(), scheduler: "pf".into(), blocks: 51 }], start: Vec::new(), classes: Vec::new(), log_path: None, members,
            be_starvation_slots: 40, pf: crate::cell::ProportionalFair::default(),
        });
        ForwardConfig {
            links: (0..links).map(link).collect(), bypass: Vec::new(), delays: Vec::new(), link_opts: LinkOptions::default(), seed: 1,
            stats_path: Some("s".into()), stats_interval_ns: 1, command_line: String::new(), quiet: true, batch_ns: 0, coalesce_ns: 0,
            cpu: Some(2), gso: false, ring_frames: None, cells: [cell, None], cell_notice_port: None, link_ids: Vec::new(), stats_share: None,
            timeline: Vec::new(), timeline_log: None, nics: Vec::new(), nic_classes: Vec::new(), nic_default: crate::mecanic::DEFAULT_RULE, nic_log: None, nic_patterns: None, nic_scan: Vec::new(), cu: None, cu_log: None,
        }
    }

    #[test]
    fn split_keeps_a_cells_members_together_and_deals_out_the_rest() {
        let parts = split(config_with(5, Some(vec![3, 1])), 3);
        let ids: Vec<Vec<usize>> = parts.iter().map(|c| c.link_ids.clone()).collect();
        assert_eq!(ids, vec![vec![1, 3], vec![0, 4], vec![2]]);
        let names: Vec<&str> = parts[0].links.iter().map(|l| l.name.as_str()).collect();
        assert_eq!(names, ["l1", "l3"]);
        // the cell lives where its members are, its UE order kept, in local indices
        assert_eq!(parts[0].cells[0].as_ref().map(|c| c.members.clone()), Some(vec![1, 0]));
        assert!(parts[1].cells[0].is_none() && parts[2].cells[0].is_none());
        assert_eq!(parts.iter().map(|c| c.cpu).collect::<Vec<_>>(), [Some(2), Some(3), Some(4)]);
        assert!(parts.iter().all(|c| c.stats_share.as_ref().is_some_and(|s| Arc::ptr_eq(s, parts[0].stats_share.as_ref().unwrap()))));
        // more threads than links: one link each; one thread: the config as it was
        assert_eq!(split(config_with(2, None), 8).len(), 2);
        let one = split(config_with(3, None), 1);
        assert!(one.len() == 1 && one[0].link_ids.is_empty() && one[0].stats_share.is_none());
    }

    #[test]
    fn shared_statistics_are_written_once_every_link_has_an_entry_in_link_order() {
        let share = StatsShare::new(3);
        assert_eq!(share.compose(1.0, &[0, 2], vec!["{\"name\": \"a\"}".into(), "{\"name\": \"c\"}".into()]), None);
        let doc = share.compose(0.5, &[1], vec!["{\"name\": \"b\"}".into()]).expect("complete");
        // the latest time any thread reported: a reader never sees time go back
        assert_eq!(doc, "{\"time_s\": 1.000000, \"links\": [{\"name\": \"a\"}, {\"name\": \"b\"}, {\"name\": \"c\"}]}\n");
    }
}
