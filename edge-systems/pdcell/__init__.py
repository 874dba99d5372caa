"""pDCell's credit transport outside the emulator (issue 41; docs/pdcell.md):
the sources' side (source.py) and the UEs' side (sink.py) of the protocol whose
other end, the CU, runs in mahimahi-link (`--cu`, src/pdcell/)."""
