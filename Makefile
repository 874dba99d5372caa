bench:
	./setup.sh --no-demo
	.venv/bin/python mahimahi-link/bench/bench.py

test:
	./run-tests.sh

.PHONY: bench test
