"""The shared cell's side of a run (issue #18): its best-effort bulk
traffic, Tutti's request notices from the edge, and what its scheduler log
says about each UE. The cell itself is mahimahi-link's (src/cell/)."""
