"""Scripts that run on the nodes' side, not in the controller: the exec
wrapper every node process starts through (node_exec.py, run as a file with
`python -I -S`), the machine-side helper of the remote providers (hostside.py:
namespaces, cgroups, samples, teardown) and the VM launcher (vmlaunch.py).
Each runs as a script by its path, also on machines that have only a copy of
continuum/."""
