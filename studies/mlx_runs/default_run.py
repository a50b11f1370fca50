"""The default run (`scripts/train`, the embedded default config) over several seeds: what it learns and how long
it takes. Per seed: greedy test-split accuracy per family at the first and the last eval with the number of test
tasks, sampled reward in the first and last quarter of the steps, groups with signal, seconds per step (from
log.jsonl) and the wall time of the whole `openenv-prime train` command, with the load average beside it.

    LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libopenblas.so.0 .venv/bin/python -m studies.mlx_runs.default_run --seeds 0 1 2
    LD_PRELOAD=... .venv/bin/python -m studies.mlx_runs.default_run --seeds 0 --set grpo.learning_rate=1e-4 --out runs/lr1e-4

Each seed runs as its own `openenv-prime train` process, one after the other; --set KEY=VALUE (a TOML value) changes
the default for a sweep. A finished seed's run directory is reported, not run again.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
import tomllib
from pathlib import Path

from studies.run_dirs import finished, records, run_json


def config_with(overrides: list[str], seed: int) -> dict:
    """The embedded default with the seed and each KEY=VALUE override applied (dotted keys, TOML values)."""
    from openenv_prime.mlx_trainer.config import config_from_dict, load_config

    data = load_config(None).model_dump()
    data["seed"] = seed
    for item in overrides:
        key, _, value = item.partition("=")
        *sections, name = key.strip().split(".")
        target = data
        for section in sections:
            target = target[section]
        target[name] = tomllib.loads(f"v = {value}")["v"]
    return config_from_dict(data, "(--set)").model_dump()


def run_seed(seed: int, out: Path, overrides: list[str]) -> dict:
    from openenv_prime.mlx_trainer.config import config_from_dict, dump_toml

    run = out / f"seed{seed}"
    wall = None
    load = os.getloadavg()[0]
    if not finished(run):
        out.mkdir(parents=True, exist_ok=True)
        config = out / f"seed{seed}.toml"
        config.write_text(dump_toml(config_from_dict(config_with(overrides, seed))))
        started, cpu = time.perf_counter(), _children_cpu()
        done = subprocess.run([sys.executable, "-m", "openenv_prime", "train", str(config), "--out", str(run),
                               "--no-progress"], capture_output=True, text=True)
        wall, cpu = time.perf_counter() - started, _children_cpu() - cpu
        if done.returncode != 0:
            raise SystemExit(f"seed {seed} failed:\n{done.stderr[-3000:]}")
        print(done.stdout, flush=True)
        (run / "bench.json").write_text(json.dumps({"wall_s": wall, "cpu_s": cpu, "load_start": load,
                                                    "load_end": os.getloadavg()[0]}))
    bench = run_json(run, "bench.json", {})
    steps, evals = records(run)
    n = len(steps)
    q = max(1, n // 4)
    return {
        "seed": seed, "steps": n,
        "reward": (statistics.mean(s["reward"] for s in steps[:q]), statistics.mean(s["reward"] for s in steps[-q:])),
        "signal": (sum(s["groups_with_signal"] for s in steps[:q]), sum(s["groups_with_signal"] for s in steps[-q:]),
                   sum(s["groups"] for s in steps[:q])),
        "step_s": statistics.median(sum(s["seconds"].values()) for s in steps[1:] or steps),
        "first": evals[0], "last": evals[-1],
        "wall_s": bench.get("wall_s"), "cpu_s": bench.get("cpu_s"), "load": (bench.get("load_start"), bench.get("load_end")),
    }


def _children_cpu() -> float:
    """CPU seconds (user + system) of this process's finished children. On a busy machine this is what the run costs,
    whatever the wall clock says: on two otherwise idle cores the wall time lies between half of it and all of it."""
    import resource

    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def report(rows: list[dict]) -> None:
    families = sorted({f for r in rows for f in r["first"]["accuracy"]})
    print(f"\n| seed | greedy eval per family, step {rows[0]['first']['step']} -> {rows[0]['last']['step']} (test tasks) | "
          "sampled reward, first -> last quarter | groups with signal, first -> last quarter | s per step (median) | "
          "wall s (load avg start/end) | CPU s |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        evals = ", ".join(
            f"{f} {r['first']['accuracy'][f]:.2f} -> {r['last']['accuracy'][f]:.2f} "
            f"({r['last']['accuracy'][f] - r['first']['accuracy'][f]:+.2f}, {r['last']['n'][f]})" for f in families)
        wall = f"{r['wall_s']:.0f} ({r['load'][0]:.1f}/{r['load'][1]:.1f})" if r["wall_s"] else "(not timed here)"
        cpu = f"{r['cpu_s']:.0f}" if r.get("cpu_s") else ""
        print(f"| {r['seed']} | {evals} | {r['reward'][0]:.2f} -> {r['reward'][1]:.2f} | "
              f"{r['signal'][0]} -> {r['signal'][1]} of {r['signal'][2]} | {r['step_s']:.1f} | {wall} | {cpu} |")
    for f in families:
        gains = [r["last"]["accuracy"][f] - r["first"]["accuracy"][f] for r in rows]
        print(f"family {f}: gain per seed {', '.join(f'{g:+.2f}' for g in gains)}; median {statistics.median(gains):+.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--out", type=Path, default=Path("runs/default-seeds"))
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                        help="change a key of the default, e.g. grpo.learning_rate=1e-4 (repeatable)")
    args = parser.parse_args()
    report([run_seed(seed, args.out, args.overrides) for seed in args.seeds])


if __name__ == "__main__":
    main()
