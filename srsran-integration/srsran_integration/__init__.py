"""The optional real-RAN path: srsRAN 4G over its ZMQ virtual radio on one
machine, or over USRPs in a lab, in place of the emulated cellular link."""
