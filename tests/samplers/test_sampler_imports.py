"""`openenv_prime.samplers` stays standard library only and imports fast: every trainer can afford it."""

import json
import subprocess
import sys

HEAVY = ("verifiers", "mlx", "mlx_lm", "prime_rl", "openenv", "httpx", "numpy", "pydantic", "websockets", "rich", "torch")

PROBE = f"""
import json, sys, time
t0 = time.perf_counter()
import openenv_prime.samplers
elapsed = time.perf_counter() - t0
heavy = sorted(m for m in sys.modules if m.split('.')[0] in {HEAVY!r})
print(json.dumps({{"elapsed": elapsed, "heavy": heavy}}))
"""


def _probe() -> dict:
    done = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=60, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_samplers_import_no_heavy_dependency():
    assert _probe()["heavy"] == []


def test_samplers_import_under_100_ms():
    # The fastest of 5 fresh interpreters: other processes on a busy CI machine only ever add time.
    fastest = min(_probe()["elapsed"] for _ in range(5))
    assert fastest < 0.100, f"import openenv_prime.samplers took {fastest * 1000:.1f} ms (min of 5)"
