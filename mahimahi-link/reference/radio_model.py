"""Reference model of the radio's timing after the trace (src/radio.rs), written
from its specification, not from the Rust: TDD slots, a pipeline delay,
HARQ per transport block, in-order delivery.

A packet that leaves the link at t is ready at t + delay. It is transmitted
in the first slot, from the one holding that instant, that belongs to its
direction (FDD: every slot; TDD: U for the uplink, D and S for the
downlink) and arrives at that slot's end (its transport block decoded).
All packets transmitted in one slot form one transport block.
Each block fails each of its transmissions with probability `bler` (one
uniform draw per transmission, drawn when the block is first met, at most
`max_tx` draws; SplitMix64 seeded as the emulator's `simulate`, 1): every
failure moves the arrival on by whole slots, to the direction's first slot
at least `harq_rtt_slots` after the previous transmission; `max_tx`
failures lose the block's packets. Delivery is in order: a packet never
arrives before the one delivered ahead of it."""

from __future__ import annotations

from dataclasses import dataclass

from mmlink_model import SplitMix64


@dataclass
class Radio:
    slot_ns: int = 1_000_000
    pattern: str | None = None  # e.g. "DDDSU"
    uplink: bool = True
    delay_ns: int = 0
    bler: float = 0.0
    harq_rtt_slots: int = 8
    max_tx: int = 4

    def mine(self, slot: int) -> bool:
        if self.pattern is None:
            return True
        kind = self.pattern[slot % len(self.pattern)]
        return kind == "U" if self.uplink else kind in "DS"


def apply(radio: Radio, departures: list[tuple[int, int]], seed: int = 1) -> list[tuple[str, int, int]]:
    """departures: (packet id, time it left the link), in order. Returns ("d", id, arrival) or
    ("h", id, left the link) for a packet lost with its block."""
    rng = SplitMix64(seed)
    out: list[tuple[str, int, int]] = []
    blocks: dict[int, int] = {}  # slot of a block's first transmission -> its failures
    delivered = 0
    for pid, t in departures:
        ready = t + radio.delay_ns
        slot = ready // radio.slot_ns
        while not radio.mine(slot):
            slot += 1
        arrival = (slot + 1) * radio.slot_ns
        if slot not in blocks:
            failures = 0
            if radio.bler > 0:
                for _ in range(radio.max_tx):
                    if rng.next_f64() < radio.bler:
                        failures += 1
                    else:
                        break
            blocks[slot] = failures
        failures = blocks[slot]
        if failures == radio.max_tx:
            out.append(("h", pid, t))
            continue
        tx = slot
        for _ in range(failures):
            nxt = tx + radio.harq_rtt_slots
            while not radio.mine(nxt):
                nxt += 1
            arrival += (nxt - tx) * radio.slot_ns
            tx = nxt
        delivered = max(delivered, arrival)
        out.append(("d", pid, delivered))
    return out
