"""Edge systems: each one package here (smec/, mosaic/, tutti/, mecanic/,
pdcell/) on one interface (system.py), listed once in registry.py. The runner, the plan, the providers
and results/ iterate over the registered systems; none of them names one.
docs/architecture.md has the checklist for adding a system."""
