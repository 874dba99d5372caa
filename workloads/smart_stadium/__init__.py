"""SMEC's smart stadium (SS), uplink-heavy: a camera streams video to the edge
in chunks, and the edge transcodes each chunk to lower resolutions for the
spectators (SLO 100 ms in SMEC).

Scaled to a 2-core machine, and said so in docs/workloads.md: SMEC sends 4K60
at 20 Mbit/s; here the camera's clip is 1280x720 at 60 frames/s, 2.2 Mbit/s
(the same bits per pixel), a chunk being 6 frames (100 ms of video) and the
renditions 480p and 240p, all [workload.params]."""
