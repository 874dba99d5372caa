"""`python3 -m workloads endpoint|server APP`: run one side of a built-in app
under the environment-variable contract (workloads/contract.py);
`python3 -m workloads calibrate APP`: time its server on this node
(workloads/calibrate.py)."""

import importlib
import os
import sys

from workloads import apps, calibrate, driver

APPS = apps()


def main(argv: list[str]) -> int:
    if len(argv) != 2 or argv[0] not in ("endpoint", "server", "calibrate") or argv[1] not in APPS:
        print(f"usage: python3 -m workloads endpoint|server|calibrate {'|'.join(APPS)}", file=sys.stderr)
        return 2
    side, app = argv
    if side == "calibrate":
        return calibrate.main(app)
    module = importlib.import_module(f"workloads.{app}.{side}")
    if side == "endpoint":
        return driver.run_endpoint(module.Endpoint)
    return driver.run_server(module.Server)


if __name__ == "__main__":
    rc = main(sys.argv[1:])
    # Every record is written and closed by now. Skip the interpreter's
    # teardown: freeing TensorFlow's or torch's state takes ~5 s, which the
    # runner would wait out after every run.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(rc)
