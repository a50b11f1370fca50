"""The default run in TRL beside the MLX trainer, interleaved per seed: held-out gain, seconds per step, peak memory,
and the share of a TRL step spent in openenv-prime's sampler, dataset, reward hook and eval scheduling.

    LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libopenblas.so.0 .venv/bin/python -m studies.trl_vs_mlx --seeds 0 1 2

Per seed: `examples/trl_smollm2.py` (TRL 1.16 GRPOTrainer, SmolLM2-135M-Instruct from the GGUF, LoRA, the curriculum
over reasoning-gym's products/0 and basic_arithmetic/0), then `openenv-prime train` on configs/mlx/default.toml with
the same seed (studies/mlx_runs/default_run.py's runner): the same tasks, held-out questions, sampler, group
size, token budget, LoRA and learning-rate schedule. Each run is its own process; its peak resident memory is the
process's (and its server's) maximum, read with wait4. A finished seed's run directories are reported, not run again.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from studies.mlx_runs.default_run import run_seed as run_mlx_seed
from studies.run_dirs import run_json

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "trl_smollm2.py"


def run_child(argv: list[str]) -> tuple[int, float, float]:
    """Run ``argv``; its exit code, wall seconds and peak RSS in MB (the child's and its waited-for children's)."""
    started = time.perf_counter()
    process = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(process.pid, 0)
    process.returncode = os.waitstatus_to_exitcode(status)
    return process.returncode, time.perf_counter() - started, usage.ru_maxrss / 1024


def run_trl_seed(seed: int, out: Path) -> dict:
    run = out / f"trl-seed{seed}"
    if not (run / "summary.json").is_file():
        code, wall, peak = run_child([sys.executable, str(EXAMPLE), "--seed", str(seed), "--out", str(run)])
        if code != 0:
            raise SystemExit(f"TRL seed {seed} failed (exit {code}); see {run}")
        (run / "bench.json").write_text(json.dumps({"wall_s": wall, "peak_rss_mb": peak, "load": os.getloadavg()[0]}))
    summary = run_json(run, "summary.json")
    bench = run_json(run, "bench.json")
    first, last = summary["evals"][0], summary["evals"][-1]
    return {"trainer": "TRL", "seed": seed, "first": first, "last": last, "step_s": summary["seconds_per_step"],
            "peak_mb": bench["peak_rss_mb"], "overhead": summary["overhead_share"], "timers": summary["timers"],
            "wall_s": bench["wall_s"], "load": bench["load"]}


def run_mlx(seed: int, out: Path) -> dict:
    run = out / f"mlx-seed{seed}"
    if not (run / "bench-peak.json").is_file():
        code, wall, peak = run_child([sys.executable, "-c", "from studies.mlx_runs.default_run import run_seed; "
                                      f"from pathlib import Path; run_seed({seed}, Path({str(out / 'mlx')!r}), [])"])
        if code != 0:
            raise SystemExit(f"MLX seed {seed} failed (exit {code})")
        run.mkdir(parents=True, exist_ok=True)
        (run / "bench-peak.json").write_text(json.dumps({"peak_rss_mb": peak, "wall_s": wall, "load": os.getloadavg()[0]}))
    measured = run_json(run, "bench-peak.json")
    row = run_mlx_seed(seed, out / "mlx", [])  # the finished run's table row
    return {"trainer": "MLX", "seed": seed, "first": row["first"], "last": row["last"], "step_s": row["step_s"],
            "peak_mb": measured["peak_rss_mb"], "overhead": None, "wall_s": measured["wall_s"],
            "load": measured["load"]}


def report(rows: list[dict]) -> None:
    families = sorted({f for r in rows for f in r["first"]["accuracy"]})
    print("\n| trainer | seed | held-out accuracy per family, first -> last eval (gain) | all families | "
          "s per step | peak RSS MB | openenv-prime's share of a step | wall s (load) |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        per = ", ".join(f"{f} {r['first']['accuracy'][f]:.2f} -> {r['last']['accuracy'][f]:.2f} "
                        f"({r['last']['accuracy'][f] - r['first']['accuracy'][f]:+.2f})" for f in families)
        share = f"{100 * r['overhead']:.2g}%" if r["overhead"] is not None else "-"
        print(f"| {r['trainer']} | {r['seed']} | {per} | {r['first']['overall']:.2f} -> {r['last']['overall']:.2f} "
              f"({r['last']['overall'] - r['first']['overall']:+.2f}) | {r['step_s']:.1f} | {r['peak_mb']:.0f} | "
              f"{share} | {r['wall_s']:.0f} ({r['load']:.1f}) |")
    for trainer in ("TRL", "MLX"):
        mine = [r for r in rows if r["trainer"] == trainer]
        if mine:
            gains = [r["last"]["overall"] - r["first"]["overall"] for r in mine]
            print(f"{trainer}: held-out gain (all families) per seed {', '.join(f'{g:+.2f}' for g in gains)}; "
                  f"median s per step {statistics.median(r['step_s'] for r in mine):.1f}; "
                  f"median peak RSS {statistics.median(r['peak_mb'] for r in mine):.0f} MB")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--out", type=Path, default=Path("runs/trl-vs-mlx"))
    args = parser.parse_args()
    rows = []
    for seed in args.seeds:  # interleaved: both trainers of a seed run back to back
        rows += [run_trl_seed(seed, args.out), run_mlx(seed, args.out)]
        report(rows)


if __name__ == "__main__":
    main()
