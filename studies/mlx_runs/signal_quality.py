"""Held-out accuracy at equal training signal: did a sampler's runs answer more of a family's held-out questions than
the comparison's other runs that trained that family on as many groups with signal?

Groups with signal per episode counts every group alike, and in the 10-seed comparison (docs/mlx.md) the samplers
that drew the most of them answered the fewest held-out questions. This separates how much a run trained a family
from how well: per family in reach, one least-squares line over every finished run of every sampler named, the
family's held-out accuracy at the last eval against log(1 + the run's groups with signal on that family); per
sampler, the mean over its runs of each run's mean residual (a run's families share one model), with its standard
error over runs. A positive residual: more held-out questions answered than runs with as many groups with signal.

    .venv/bin/python -m studies.mlx_runs.signal_quality --out runs/compare-9 \\
        --samplers curriculum frontier greso uniform reach reach-lr5e-05 frontier-lr5e-05
"""

from __future__ import annotations

import argparse
import math
import statistics
from collections import Counter
from pathlib import Path
from typing import NamedTuple

from studies.mlx_runs.compare import families_in_reach
from studies.run_dirs import load_runs
from studies.worlds.calibration import TOLERANCE
from openenv_prime.samplers.validation import has_spread


class Point(NamedTuple):
    """One run's one family: its groups with signal on the family and its held-out accuracy there at the last eval."""

    sampler: str
    seed: int
    family: str
    signal_groups: int
    accuracy: float


def points(runs: dict[str, dict[int, dict]], families: list[str]) -> list[Point]:
    """A point per finished run and family (runs as run_dirs.load_runs gives them)."""
    out = []
    for sampler, by_seed in runs.items():
        for seed, run in sorted(by_seed.items()):
            if not run["finished"]:
                continue
            signal = Counter(g["key"] for step in run["steps"] for g in step["group_rewards"]
                             if has_spread(g["rewards"], TOLERANCE))
            last = run["evals"][-1]["accuracy"]
            out += [Point(sampler, seed, family, signal[family], last[family]) for family in families]
    return out


def residuals(pts: list[Point]) -> tuple[dict[str, tuple[float, float]], list[tuple[Point, float]]]:
    """(family -> the fitted (intercept, slope) of accuracy on log(1 + groups with signal), each point's residual).
    A family whose runs all had the same count has no slope to fit: its residuals are from its mean (slope 0)."""
    lines, out = {}, []
    for family in sorted({p.family for p in pts}):
        mine = [p for p in pts if p.family == family]
        xs, ys = [math.log1p(p.signal_groups) for p in mine], [p.accuracy for p in mine]
        if len(set(xs)) > 1:
            slope, intercept = statistics.linear_regression(xs, ys)
        else:
            slope, intercept = 0.0, statistics.fmean(ys)
        lines[family] = (intercept, slope)
        out += [(p, y - (intercept + slope * x)) for p, x, y in zip(mine, xs, ys)]
    return lines, out


def table(pts: list[Point]) -> str:
    """The per-family lines, then one markdown row per sampler (in the order its points come)."""
    lines, fitted = residuals(pts)
    text = ["Per family in reach, held-out accuracy = a + b log(1 + groups with signal on the family), over "
            f"{len({(p.sampler, p.seed) for p in pts})} runs:"]
    text += [f"  {family}: a {a:.3f}, b {b:+.3f}" for family, (a, b) in lines.items()]
    text += ["", "| sampler | runs | groups with signal per family (median) | held-out accuracy (mean) | "
             "residual at equal signal (mean over runs ± SE) |", "|---|---:|---:|---:|---:|"]
    for sampler in dict.fromkeys(p.sampler for p in pts):
        mine = [(p, r) for p, r in fitted if p.sampler == sampler]
        seeds = sorted({p.seed for p, _ in mine})  # a run's families share its model: one residual per run, their mean
        res = [statistics.fmean(r for p, r in mine if p.seed == seed) for seed in seeds]
        error = statistics.stdev(res) / math.sqrt(len(res)) if len(res) > 1 else math.nan
        text.append(f"| {sampler} | {len(seeds)} | "
                    f"{statistics.median(p.signal_groups for p, _ in mine):.1f} | "
                    f"{statistics.fmean(p.accuracy for p, _ in mine):.3f} | "
                    f"{statistics.fmean(res):+.3f} ± {error:.3f} |")
    return "\n".join(text)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", required=True, help="a compare output folder (OUT/seedN/NAME/log.jsonl)")
    parser.add_argument("--samplers", nargs="+", required=True,
                        help="run directory names, e.g. curriculum reach-lr5e-05")
    args = parser.parse_args()
    runs = load_runs(Path(args.out), args.samplers)
    families = families_in_reach(runs)
    pts = points(runs, families)
    if not pts:
        parser.error(f"{args.out}: no finished run of {', '.join(args.samplers)} with a family in reach; "
                     "name run directories that hold finished runs (compare --report-only lists them)")
    print(table(pts))


if __name__ == "__main__":
    main()
