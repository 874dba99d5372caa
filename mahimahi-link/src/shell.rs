//! Shell mode, with mm-link's habits: `mahimahi-link UP DOWN -- cmd` runs
//! `cmd` in a fresh network namespace whose only way out crosses the link.
//!
//! Layout (all created here, all named with this process id, all removed on
//! exit — also on Ctrl-C and on errors):
//!
//! ```text
//!  [mmlPIDs: cmd, ingress 100.64.x.2] --veth-- [mmlPIDr: ue | emulator | core] --veth-- [here: mmlPID 100.64.x.1]
//! ```
//! The emulator's namespace has no addresses: it is a layer-2 hop, so the
//! command talks straight to 100.64.x.1 (exported as MAHIMAHI_BASE, like
//! mm-link) and to anything this namespace routes.

use crate::forward::{Forwarder, LinkSpec, Stop};
use crate::sys;
use std::process::Command;

fn ip(args: &[&str]) -> Result<(), String> {
    let out = Command::new("ip").args(args).output().map_err(|e| format!("cannot run ip (install iproute2): {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!("ip {} failed ({}): {}", args.join(" "), out.status, String::from_utf8_lossy(&out.stderr).trim()))
    }
}

/// Removes what shell mode created, in reverse order, when dropped.
struct Cleanup {
    namespaces: Vec<String>,
    outer: Option<String>,
}

impl Drop for Cleanup {
    fn drop(&mut self) {
        if let Some(o) = self.outer.take() {
            let _ = Command::new("ip").args(["link", "del", &o]).stderr(std::process::Stdio::null()).status();
        }
        for ns in self.namespaces.drain(..).rev() {
            if let Err(e) = ip(&["netns", "del", &ns]) {
                crate::say!("mahimahi-link: cleanup: {e}");
            }
        }
    }
}

pub fn run(mut cfg: crate::forward::ForwardConfig, mut link: LinkSpec, command: Vec<String>) -> Result<i32, String> {
    let pid = std::process::id();
    let ran = format!("mml{pid}r");
    let sh = format!("mml{pid}s");
    let outer = format!("mml{pid}");
    let idx = pid % (1 << 20);
    let base = u32::from(std::net::Ipv4Addr::new(100, 64, 0, 0)) + idx * 4;
    let outer_ip = std::net::Ipv4Addr::from(base + 1).to_string();
    let inner_ip = std::net::Ipv4Addr::from(base + 2).to_string();
    let mut guard = Cleanup { namespaces: Vec::new(), outer: None };
    for ns in [&ran, &sh] {
        ip(&["netns", "add", ns])?;
        guard.namespaces.push(ns.clone());
    }
    ip(&["link", "add", "ue", "netns", &ran, "type", "veth", "peer", "name", "ingress", "netns", &sh])?;
    ip(&["link", "add", &outer, "type", "veth", "peer", "name", "core", "netns", &ran])?;
    guard.outer = Some(outer.clone());
    ip(&["addr", "add", &format!("{outer_ip}/30"), "dev", &outer])?;
    ip(&["link", "set", &outer, "up"])?;
    ip(&["-n", &sh, "addr", "add", &format!("{inner_ip}/30"), "dev", "ingress"])?;
    ip(&["-n", &sh, "link", "set", "lo", "up"])?;
    ip(&["-n", &sh, "link", "set", "ingress", "up"])?;
    ip(&["-n", &sh, "route", "add", "default", "via", &outer_ip])?;
    sys::in_netns(&ran, || {
        let _ = std::fs::write("/proc/sys/net/ipv6/conf/all/disable_ipv6", "1");
        let _ = std::fs::write("/proc/sys/net/ipv6/conf/default/disable_ipv6", "1");
        Ok(())
    })
    .map_err(|e| e.to_string())?;
    ip(&["-n", &ran, "link", "set", "ue", "up"])?;
    ip(&["-n", &ran, "link", "set", "core", "up"])?;
    // The hosts' veths: with --gso they keep segmentation offload and hand
    // over super-frames; without, they send MTU-sized frames.
    let host_offloads = if cfg.gso { sys::enable_tx_offloads } else { sys::disable_offloads };
    host_offloads(&outer);
    sys::in_netns(&sh, || {
        host_offloads("ingress");
        Ok(())
    }).map_err(|e| e.to_string())?;
    // The emulator gets one core; the hosts' receive stacks run on the others.
    let cpu = *cfg.cpu.get_or_insert(0);
    crate::rps::steer_rx_away_from(None, &outer, cpu);
    crate::rps::steer_rx_away_from(Some(&sh), "ingress", cpu);
    link.netns = Some(ran.clone());
    link.ue_if = "ue".into();
    link.core_if = "core".into();
    cfg.links = vec![link];
    let mut fwd = Forwarder::open(cfg)?;

    let argv = if command.is_empty() { vec![std::env::var("SHELL").unwrap_or_else(|_| "/bin/sh".into())] } else { command };
    let ns_path = format!("/var/run/netns/{sh}");
    let ns_file = std::fs::File::open(&ns_path).map_err(|e| format!("{ns_path}: {e}"))?;
    let ns_fd = std::os::fd::AsRawFd::as_raw_fd(&ns_file);
    let mut cmd = Command::new(&argv[0]);
    cmd.args(&argv[1..]).env("MAHIMAHI_BASE", &outer_ip);
    sys::spawn_in_netns(&mut cmd, ns_fd);  // ns_file stays open until after the spawn
    let mut child = cmd.spawn().map_err(|e| format!("cannot start {:?}: {e}", argv[0]))?;
    drop(ns_file);
    let pidfd = sys::pidfd_open(child.id()).map_err(|e| e.to_string())?;
    let stop = fwd.run(Some(pidfd));
    sys::close(pidfd);
    if !matches!(stop, Ok(Stop::ChildExited)) {
        sys::terminate(child.id());
    }
    let status = child.wait().map_err(|e| e.to_string())?;
    drop(fwd);
    drop(guard);
    stop?;
    Ok(status.code().unwrap_or_else(|| 128 + std::os::unix::process::ExitStatusExt::signal(&status).unwrap_or(0)))
}
