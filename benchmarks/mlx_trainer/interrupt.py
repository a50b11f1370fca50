"""How long `openenv-prime train` takes to stop after Ctrl-C: SmolLM2 on chain_sum (`configs/mlx/chain-sum.toml`,
evals off), Ctrl-C sent at spread-out moments of step 2 (generation or training), beside how long step 1's generation took.

    LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libopenblas.so.0 .venv/bin/python -m benchmarks.mlx_trainer.interrupt --tries 4
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.mlx_trainer.common import chain_sum_config


def interrupt(args) -> None:
    from openenv_prime.mlx_trainer.config import config_from_dict, dump_toml

    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for k in range(args.tries):
            run, cfg = Path(tmp) / f"run{k}", Path(tmp) / f"config{k}.toml"
            data = chain_sum_config()
            data.update(steps=50, plot=False)
            data["eval"]["enabled"] = False
            cfg.write_text(dump_toml(config_from_dict(data)))
            proc = subprocess.Popen([sys.executable, "-m", "openenv_prime", "train", str(cfg), "--out", str(run),
                                     "--no-progress"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
            while not (run / "checkpoints" / "step_000001" / "state.json").exists():
                if proc.poll() is not None:
                    raise SystemExit(f"train stopped before its first checkpoint: {proc.stderr.read()[-2000:]}")
                time.sleep(0.01)
            first = json.loads((run / "log.jsonl").read_text().splitlines()[-1])["seconds"]
            delay = (k + 0.5) / args.tries * (first["generation"] + first["training"])
            time.sleep(delay)
            sent = time.perf_counter()
            proc.send_signal(signal.SIGINT)
            _, err = proc.communicate(timeout=600)
            rows.append((delay, time.perf_counter() - sent, proc.returncode, first, err.strip().splitlines()[-1][:90]))
            print(f"try {k + 1}: stopped {rows[-1][1]:.2f} s after Ctrl-C (exit {proc.returncode})", file=sys.stderr, flush=True)
    print(f"\nCtrl-C during step 2 of SmolLM2 on chain_sum (configs/mlx/chain-sum.toml, {os.cpu_count()} CPUs)\n")
    print("| Ctrl-C at (s into step 2) | step 1: generation s / training s | seconds to exit | exit status | last line |")
    print("|---|---|---|---|---|")
    for delay, took, code, first, line in rows:
        print(f"| {delay:.1f} | {first['generation']:.1f} / {first['training']:.1f} | {took:.2f} | {code} | {line} |")
    print(f"\nmedian {statistics.median(r[1] for r in rows):.2f} s, max {max(r[1] for r in rows):.2f} s to exit "
          "(each includes writing the final checkpoint and closing the embedded server)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tries", type=int, default=4)
    interrupt(parser.parse_args())


if __name__ == "__main__":
    main()
