"""Start-up cost of the chain_sum server: importing openenv with and without gradio, and launch to healthy.

Run: .venv/bin/python -m benchmarks.envs.server_startup [--repeats 3]
Each openenv interpreter found (.venv's openenv 0.4.1; OPENENV_PRIME_OPENENV010_PYTHON's 0.10.0) is measured.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time

from openenv_prime.envs.launch import local_server

IMPORT = "import time, sys; {block}t = time.perf_counter(); import openenv.core.env_server; print(time.perf_counter() - t)"


def import_seconds(python: str, block_gradio: bool) -> float:
    code = IMPORT.format(block="sys.modules['gradio'] = None; " if block_gradio else "")
    return float(subprocess.run([python, "-c", code], check=True, capture_output=True, text=True, timeout=300).stdout)


def launch_seconds(python: str) -> float:
    start = time.perf_counter()
    with local_server(python=python):
        return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    pythons = {"openenv 0.4.1 (.venv)": sys.executable}
    if os.environ.get("OPENENV_PRIME_OPENENV010_PYTHON"):
        pythons["openenv 0.10.0"] = os.environ["OPENENV_PRIME_OPENENV010_PYTHON"]
    print(f"median of {args.repeats} runs, seconds")
    print("| server interpreter | import openenv (with gradio) | import openenv (gradio blocked) | ratio | launch to healthy /health |")
    print("|---|---:|---:|---:|---:|")
    for name, python in pythons.items():
        with_gradio = statistics.median(import_seconds(python, False) for _ in range(args.repeats))
        blocked = statistics.median(import_seconds(python, True) for _ in range(args.repeats))
        launch = statistics.median(launch_seconds(python) for _ in range(args.repeats))
        print(f"| {name} | {with_gradio:.2f} | {blocked:.2f} | {with_gradio / blocked:.1f}x | {launch:.2f} |")


if __name__ == "__main__":
    main()
