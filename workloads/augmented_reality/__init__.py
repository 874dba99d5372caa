"""SMEC's augmented reality (AR): the phone sends camera frames, the edge
detects objects in them (SLO 100 ms in SMEC).

Scaled to a 2-core machine, and said so in docs/workloads.md: SMEC runs
YOLO on a GPU; here a torchvision SSDlite (MobileNetV3-Large) runs on the
CPU at 224x224 input (its native 320x320 takes ~75 ms a frame on one core
here, too close to the SLO to leave the network anything). The camera's
frames are 1920x1080 JPEGs of about 33 KB (SMEC's 8 Mbit/s at 30 frames/s);
pre-processing on the phone decodes and resizes them to the detector's input."""
