"""SMEC's edge side (issue #19; ../shared/design/SPEC-smec.md): the six-call
request-lifecycle API, network-latency estimation without synchronised
clocks (probes and ACKs), request budgets, and the edge manager's CPU
policy. Pure logic here is driven by the caller's clock, so the tests can
hold it to exact numbers; the daemons and actuators wrap it."""
