"""Flows from the data center to the UEs (issue 41, pDCell's evaluation): a
UE asks for a flow (a 24-byte request naming its size), the server sends the
flow's bytes back on a TCP connection of its own (`answers_as_flows`), so
the transport underneath (TCP, or pDCell's credit transport through its
shims) carries each answer as one flow. Sizes are drawn from a published
flow-size distribution (sizes.py: web search, data mining) or given; the
completion time is the downlink part of the request's latency (server's
first byte to the UE's last)."""
