bench:
	./setup.sh --no-demo
	cd mahimahi-link && cargo build --release --quiet --example wakeup_cost
	cd mahimahi-link && cargo run --release --quiet --example cell_bench 10
	.venv/bin/python mahimahi-link/bench/bench.py
	.venv/bin/python mahimahi-link/bench/bench_many_ues.py 100
	.venv/bin/python mahimahi-link/bench/bench_many_ues.py 100 --cell=pf
	.venv/bin/python mahimahi-link/bench/bench_many_ues.py 100 --cell=smec
	.venv/bin/python edge-systems/bench/mosaic_decision.py
	ls -d runs/*-quickstart >/dev/null 2>&1 || .venv/bin/python -m continuum run configs/quickstart.toml
	.venv/bin/python bench/report_scale.py --endpoints 100 --minutes 10

test:
	./run-tests.sh

.PHONY: bench test
