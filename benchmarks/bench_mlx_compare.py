"""Curriculum vs uniform on SmolLM2 + chain_sum (`configs/mlx/chain-sum.toml`'s settings), several seeds: sampled
reward by quarter of the run, groups with signal, greedy eval per tier, and the runs overlaid in one plot.

    LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libopenblas.so.0 .venv/bin/python benchmarks/bench_mlx_compare.py --steps 48 --seeds 0 1 2 3 --out runs/compare

A killed compare continues where it stopped (finished runs are skipped, a started one resumes from its checkpoint);
--samplers curriculum / uniform splits it over two processes; --report-only prints the table and plot of what is there.
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

from bench_mlx_common import finished, records, run_training


def compare(args) -> None:
    """Curriculum vs uniform for each seed, one after the other, then the report."""
    from openenv_prime.envs.launch import local_server
    from openenv_prime.mlx_trainer.training.checkpoint import latest_checkpoint

    out = Path(args.out)
    if not args.report_only:
        with local_server("chain-sum", tiers=args.tiers, max_sessions=64) as url:
            for seed in args.seeds:
                for sampler in args.samplers:
                    run = out / f"seed{seed}" / sampler
                    if finished(run):
                        continue
                    t = time.perf_counter()
                    run_training("smollm2-135m", url, args.steps, run, sampler=sampler, evals=True, seed=seed,
                                 every=args.eval_every, per_family=args.eval_tasks,
                                 resume=latest_checkpoint(run) is not None, max_new_tokens=args.max_tokens)
                    print(f"seed {seed} {sampler}: {args.steps} steps in {time.perf_counter() - t:.0f} s -> {run}",
                          flush=True)
    compare_report(out)


def compare_report(out: Path) -> None:
    """Per seed and median: sampled reward by quarter of the run, groups with signal, greedy eval
    accuracy per family at the last eval; plus the overlaid plot."""
    from openenv_prime.mlx_trainer.report import plot_compare

    runs = sorted(p for p in out.glob("seed*/*") if (p / "log.jsonl").is_file())
    if not runs:
        raise SystemExit(f"{out}: no runs yet")
    rows: dict[str, list[dict]] = {}
    for run in runs:
        steps, evals = records(run)
        if not steps:
            continue
        n = len(steps)
        quarters = [steps[i * n // 4:(i + 1) * n // 4] for i in range(4)]
        rows.setdefault(run.name, []).append({
            "seed": run.parent.name, "steps": n, "done": finished(run),
            "quarters": [statistics.mean(s["reward"] for s in q) if q else float("nan") for q in quarters],
            "mean": statistics.mean(s["reward"] for s in steps),
            "signal": (sum(s["groups_with_signal"] for s in steps), sum(s["groups"] for s in steps)),
            "share0": steps[-1]["sampler"].get("key/0/draw_share", float("nan")),
            "eval_step": evals[-1]["step"] if evals else None,
            "accuracy": evals[-1]["accuracy"] if evals else {},
            "first_accuracy": evals[0]["accuracy"] if evals else {},
        })
    families = sorted({f for rs in rows.values() for r in rs for f in r["accuracy"]}, key=lambda f: (len(f), f))
    print(f"\n| sampler | seed | steps | sampled reward by quarter | groups with signal | family 0 share of draws | "
          f"greedy eval accuracy per family ({', '.join(families)}) at step 0 -> last eval |")
    print("|---|---|---|---|---|---|---|")
    for sampler, rs in sorted(rows.items()):
        for r in rs:
            q = " / ".join(f"{x:.2f}" for x in r["quarters"])
            acc = " ".join(f"{r['first_accuracy'].get(f, 0):.2f}->{r['accuracy'].get(f, 0):.2f}" for f in families)
            part = "" if r["done"] else " (unfinished)"
            print(f"| {sampler} | {r['seed']} | {r['steps']}{part} | {q} | {r['signal'][0]} of {r['signal'][1]} | "
                  f"{r['share0']:.0%} | {acc} (eval at step {r['eval_step']}) |")
        med_q = " / ".join(f"{statistics.median(r['quarters'][i] for r in rs):.2f}" for i in range(4))
        med_sig = statistics.median(r["signal"][0] for r in rs)
        med_acc = " ".join(f"{statistics.median(r['accuracy'].get(f, 0) for r in rs):.2f}" for f in families)
        med_share = statistics.median(r["share0"] for r in rs)
        print(f"| **{sampler} median** | {len(rs)} seeds | | {med_q} | {med_sig:.0f} | {med_share:.0%} | {med_acc} |")
    if set(rows) >= {"curriculum", "uniform"}:
        by_seed = {r["seed"]: r for r in rows["uniform"]}
        ahead = [r["seed"] for r in rows["curriculum"] if r["seed"] in by_seed
                 and r["mean"] > by_seed[r["seed"]]["mean"]]
        paired = sum(1 for r in rows["curriculum"] if r["seed"] in by_seed)
        print(f"\ncurriculum ahead of uniform in mean sampled reward on {len(ahead)} of {paired} seeds")
    png = plot_compare(runs, out / "curriculum_vs_uniform.png")
    print(f"plot: {png}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=48)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--tiers", type=int, default=5)
    parser.add_argument("--max-tokens", type=int, default=16)
    parser.add_argument("--out", default="runs/compare")
    parser.add_argument("--eval-every", type=int, default=16)
    parser.add_argument("--eval-tasks", type=int, default=8, help="test tasks per tier at each eval")
    parser.add_argument("--samplers", nargs="+", default=["curriculum", "uniform"], choices=["curriculum", "uniform"],
                        help="run only these (two processes, one per sampler, share a machine's cores)")
    parser.add_argument("--report-only", action="store_true", help="only print the table and plot of the runs in --out")
    compare(parser.parse_args())


if __name__ == "__main__":
    main()
