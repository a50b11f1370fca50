"""What importing each entry point costs: CPU and wall milliseconds in fresh interpreters, and modules loaded.

`import openenv_prime.samplers` is what every trainer integration pays; the client and the CLI follow. The CPU
time of the importing process is the number to read on a shared machine (the wall clock also counts the
neighbours). tests/samplers/test_sampler_imports.py asserts the cause (which modules load), never the time.

    .venv/bin/python -m benchmarks.imports [--repeats 7]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

from rich.console import Console
from rich.table import Table

MODULES = ("openenv_prime.samplers", "openenv_prime.client", "openenv_prime.cli")
PROBE = """
import json, sys, time
before = set(sys.modules)
wall0, cpu0 = time.perf_counter(), time.process_time()
import {module}
wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
print(json.dumps({{"wall": wall, "cpu": cpu, "modules": len(set(sys.modules) - before)}}))
"""


def measure(module: str, repeats: int) -> dict:
    """Min and median of ``repeats`` fresh interpreters (one warm-up run first fills the bytecode cache)."""
    runs = []
    for _ in range(repeats + 1):
        done = subprocess.run([sys.executable, "-c", PROBE.format(module=module)], capture_output=True, text=True, check=True)
        runs.append(json.loads(done.stdout.strip().splitlines()[-1]))
    runs = runs[1:]
    cpu, wall = [r["cpu"] * 1000 for r in runs], [r["wall"] * 1000 for r in runs]
    return {"cpu_min": min(cpu), "cpu_median": statistics.median(cpu), "wall_min": min(wall),
            "wall_median": statistics.median(wall), "modules": runs[-1]["modules"]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7, help="fresh interpreters per module (default: %(default)s)")
    args = parser.parse_args(argv)
    table = Table(title=f"import cost, {args.repeats} fresh interpreters each (load average {os.getloadavg()[0]:.1f})")
    for column in ("module", "CPU ms (min)", "CPU ms (median)", "wall ms (min)", "wall ms (median)", "modules loaded"):
        table.add_column(column, justify="left" if column == "module" else "right")
    for module in MODULES:
        m = measure(module, args.repeats)
        table.add_row(module, f"{m['cpu_min']:.1f}", f"{m['cpu_median']:.1f}", f"{m['wall_min']:.1f}",
                      f"{m['wall_median']:.1f}", str(m["modules"]))
    Console(width=120).print(table)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
