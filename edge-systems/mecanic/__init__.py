"""MECaNIC's node side (docs/mecanic.md): what its NIC does beyond queueing,
as a process on the NIC's side of the host. `cache_agent` answers requests
whose response it holds (response caching) without them reaching the server.
The queueing itself is in the link emulator (mahimahi-link --nic)."""
