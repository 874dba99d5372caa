"""SMEC's file transfer (FT), the best-effort app: the endpoint uploads a file
(3 MB in SMEC's static workload, 1 KB-10 MB in its dynamic one; the sizes
follow [workload.payload]) and the edge stores its SHA-256 digest, answering
with it (64 bytes). What matters is the throughput it keeps while the
latency-critical apps are served."""
