"""Server side of the flows: a flow of the asked size (zeros: a transport
does not look at them), sent back on a connection of its own."""

from __future__ import annotations

from workloads.contract import ServerSettings

MAX_FLOW_BYTES = 1_000_000_000


class Server:
    answers_as_flows = True

    def __init__(self, s: ServerSettings) -> None:
        self.info = {"app": "flows", "model": "a flow source (the asked size, zeros)", "weights": "none (no model)"}

    def process(self, payload: bytes) -> bytes:
        _, size = payload.split()
        return bytes(min(int(size), MAX_FLOW_BYTES))
