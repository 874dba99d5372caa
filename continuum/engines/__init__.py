"""What starts a workload's side in a container: Docker (containers.py), and
k3s pods on the hosts provider's machines (k3s.py). Processes need neither:
they start through runtime.Node and nodeside/node_exec.py."""
