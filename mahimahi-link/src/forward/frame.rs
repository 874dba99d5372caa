//! Frames on their way through the forwarder, whole or as the MTU segments
//! of a TCP/UDP super-frame (crate::gso), and their reassembly on departure.

use crate::gso::{SuperFrame, Vnet};
use crate::Nanos;
use std::rc::Rc;

/// A frame on its way, with the virtio-net header to send it with (unused
/// on plain sockets).
pub struct Frame {
    pub(super) data: Vec<u8>,
    pub(super) vnet: Vnet,
}

/// What a link queues: a whole frame, or one MTU segment of a super-frame.
pub(super) enum Pkt {
    Whole(Frame),
    Segment(Rc<SuperFrame>, u32),
}

/// Turn departures back into frames: consecutive segments of one
/// super-frame that left in the same round go out as one frame, at the
/// departure time of the last of them.
pub(super) fn assemble(deps: &mut Vec<(Nanos, Pkt)>) -> Vec<(Nanos, Frame)> {
    let mut out = Vec::with_capacity(deps.len());
    let mut run: Option<(Rc<SuperFrame>, usize, usize, Nanos)> = None;
    let flush = |run: &mut Option<(Rc<SuperFrame>, usize, usize, Nanos)>, out: &mut Vec<(Nanos, Frame)>| {
        if let Some((sf, i, j, t)) = run.take() {
            let (vnet, data) = sf.build(i, j);
            out.push((t, Frame { data, vnet }));
        }
    };
    for (t, p) in deps.drain(..) {
        match p {
            Pkt::Whole(f) => {
                flush(&mut run, &mut out);
                out.push((t, f));
            }
            Pkt::Segment(sf, k) => {
                let k = k as usize;
                if let Some((rsf, _, j, rt)) = run.as_mut() {
                    if Rc::ptr_eq(rsf, &sf) && *j == k {
                        *j += 1;
                        *rt = t;
                        continue;
                    }
                }
                flush(&mut run, &mut out);
                run = Some((sf, k, k + 1, t));
            }
        }
    }
    flush(&mut run, &mut out);
    out
}
