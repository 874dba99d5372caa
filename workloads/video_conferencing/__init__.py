"""SMEC's video conferencing (VC): the phone sends low-resolution frames and
the edge upscales them with a super-resolution network before they go on to
the other side of the call (SLO 150 ms in SMEC).

Scaled to a 2-core machine, and said so in docs/workloads.md: frames are
480x320 ("320p") JPEGs of about 3.3 KB (SMEC's 800 kbit/s at 30 frames/s);
the network is an ESPCN (Shi et al., 2016) with 16 and 16 channels (the
paper's 64 and 32), x2, on the CPU: ~45 ms a frame on one core here, ~65 ms
with the JPEG of the answer. The response is the 960x640 frame as JPEG, so
this app loads the downlink too: ~110 KB with random weights (their output
is noise, which JPEG cannot shrink), tens of KB for a real picture."""
