"""The namespace lab these tests share with mahimahi-link's benchmarks lives
beside the emulator (mahimahi-link/lab/netlab.py)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "mahimahi-link" / "lab"))
