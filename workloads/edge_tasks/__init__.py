"""MOSAIC's edge tasks (issue #20): endpoints submit tasks of MOSAIC's six
classes over MQTT; the edge node's server queues them and runs them under
an admission policy (edge-systems/mosaic), each in a warm worker and its own
cgroup, and answers when the task is done."""

import sys

# The command of one warm task worker (worker.py), for MOSAIC's executor (its `worker`).
WORKER = (sys.executable, "-m", "workloads.edge_tasks.worker")
