"""TRL on one process and on several, interleaved per seed: seconds per step and the share of a step spent in
openenv-prime (sampler, dataset, the collectives that keep the sampler's copies identical, reward hook, eval schedule).

    LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libopenblas.so.0 .venv/bin/python -m benchmarks.trl.processes --seeds 0 --steps 4
    ... --processes 1 2 3 --completions 24     # 3 tasks x 8 rollouts a step, which 3 processes can split

One reasoning-gym server (products/0 and basic_arithmetic/0, as examples/trl_smollm2.py serves them) for every run;
each run is `torchrun --nproc_per_node N examples/trl_smollm2.py --base-url URL` (SmolLM2-135M-Instruct, LoRA, 32
completions per step, or --completions, split over the N processes, the curriculum), with evals at the first and last step. The shares
are the main process's own timers over its training time (evals left out). A finished run is reported, not run again.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

from openenv_prime.envs.launch import local_server

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "trl_smollm2.py"


def run(processes: int, seed: int, steps: int, url: str, out: Path, completions: int) -> dict:
    folder = out / f"p{processes}-seed{seed}-c{completions}"
    if not (folder / "summary.json").is_file():
        launcher = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", str(processes)]
        started = time.perf_counter()
        done = subprocess.run([*launcher, str(EXAMPLE), "--base-url", url, "--seed", str(seed), "--steps", str(steps),
                               "--eval-every", str(steps), "--test-split", "heldout", "--family-field", "family",
                               "--completions", str(completions),
                               "--out", str(folder)], cwd=ROOT, capture_output=True, text=True)
        if done.returncode != 0:
            raise SystemExit(f"{processes} process(es), seed {seed} failed:\n{done.stderr[-3000:]}")
        (folder / "bench.json").write_text(json.dumps({"wall_s": time.perf_counter() - started}))
    summary = json.loads((folder / "summary.json").read_text())
    return {"processes": processes, "seed": seed, **summary, **json.loads((folder / "bench.json").read_text())}


def table(rows: list[dict]) -> str:
    lines = ["| processes | seed | s per step | openenv-prime's share of a step | of which: sampler, rows (collectives "
             "included), rewards (s) | env resets + play (s) | evals (s) | held-out, first -> last eval |",
             "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        t = r["timers"]
        first, last = r["evals"][0]["overall"], r["evals"][-1]["overall"]
        parts = ", ".join(f"{t.get(p, 0.0):.3f}" for p in ("sampler", "rows", "rewards"))
        lines.append(f"| {r['processes']} | {r['seed']} | {r['seconds_per_step']:.1f} | {100 * r['overhead_share']:.3g}% "
                     f"| {parts} | {t.get('env_resets', 0.0) + t.get('env_play', 0.0):.2f} | {t.get('eval', 0.0):.0f} "
                     f"| {first:.2f} -> {last:.2f} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument("--processes", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--completions", type=int, default=32, help="per step, all processes together (8 per task; "
                        "a multiple of 8 and of every process count: 24 for 1, 2 and 3)")
    parser.add_argument("--out", type=Path, default=Path("runs/bench-trl-processes"))
    args = parser.parse_args(argv)
    sizes = ["--train-size", "40", "--heldout-size", "32"]
    with local_server("reasoning-gym", datasets=["products", "basic_arithmetic"], tiers=1, max_sessions=64,
                      extra_args=sizes) as url:
        rows = [run(n, seed, args.steps, url, args.out, args.completions) for seed in args.seeds for n in args.processes]
    print(table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
