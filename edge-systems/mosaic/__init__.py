"""MOSAIC's interference-aware admission for the edge node (SPEC-mosaic.md),
and the classic schedulers it is compared with, as policies over one task
model. The executor that runs real tasks under them comes with issue #20;
these modules are the decisions, tested against the spec's formulas."""
