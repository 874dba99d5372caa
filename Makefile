bench:
	./setup.sh --no-demo
	.venv/bin/python mahimahi-link/bench/bench.py
	.venv/bin/python mahimahi-link/bench/bench_many_ues.py 100

test:
	./run-tests.sh

.PHONY: bench test
