"""The tiers report: does choosing tasks by predicted GRPO signal make a policy learn faster?

The ``ordered`` world (10 tiers of 50 alike tasks, each tier one logit harder; a teaching group lifts
the next tier by ``next_transfer`` of its gain; harder tiers cost more tokens), run until every tier
reaches p >= 0.9 or a budget of 400,000 episodes, with the package's own samplers (sequential, uniform,
curriculum). Per sampler over seeds: the share of groups with signal until then, the episodes it took,
signal per 1,000 tokens, the curriculum's predicted signal beside the observed one, and curriculum-vs-
uniform ratios; ``--sweep N`` varies transfer and tier steepness. The simulator is ``simulate.py``.

Run from the repository root: .venv/bin/python -m studies.worlds.tiers [--seeds 10] [--sweep 5]
"""

from __future__ import annotations

import argparse
import math
import statistics
import time
from typing import Callable

from studies.worlds import peers
from studies.worlds.simulate import Run, simulate
from studies.worlds.worlds import OrderedTiers

BUDGET = 400_000
SAMPLERS: dict[str, Callable[..., peers.Peer]] = {
    "sequential (tier order)": peers.sequential(),
    "sequential (shuffled)": peers.sequential("shuffled"),
    "uniform": peers.uniform(),
    "curriculum": peers.curriculum(),
    "curriculum (reach)": peers.curriculum(signal="reach"),
    "curriculum (calibrated, before)": peers.curriculum(signal="calibrated"),
    "curriculum (headroom)": peers.curriculum(signal="headroom"),
    "curriculum (binary, RFC)": peers.curriculum(signal="binary"),
}
SWEEP = (  # (next_transfer, logit_step): how much easier tiers help harder ones, and how steep the tiers are
    (0.0, 1.0), (0.25, 1.0), (0.5, 1.0), (1.0, 1.0), (0.5, 0.5), (0.5, 1.5),
)


def tiers_world(next_transfer: float = OrderedTiers.next_transfer, logit_step: float = OrderedTiers.logit_step
                ) -> type[OrderedTiers]:
    if (next_transfer, logit_step) == (OrderedTiers.next_transfer, OrderedTiers.logit_step):
        return OrderedTiers
    return type("OrderedTiers", (OrderedTiers,), {"next_transfer": next_transfer, "logit_step": logit_step})


def run(name: str, seeds: int, world: type[OrderedTiers] = OrderedTiers, budget: int = BUDGET) -> list[Run]:
    return [simulate(world, SAMPLERS[name], seed, budget, stop_at_mastery=True) for seed in range(seeds)]


def spread(values: list[float], fmt: str) -> str:
    finite = [v for v in values if math.isfinite(v)]
    if not finite:
        return "never"
    body = f"{format(statistics.median(values), fmt)} [{format(min(values), fmt)}, {format(max(finite), fmt)}]"
    missed = len(values) - len(finite)
    return body + (f" ({missed} never)" if missed else "")


def speedups(cur: list[Run], uni: list[Run], budget: int) -> str:
    """Uniform's episodes to mastery over the curriculum's, per seed; an unsolved uniform run counts as the
    whole budget, making that ratio a floor (marked >=)."""
    ratios = [min(u.mastery, budget) / c.mastery for c, u in zip(cur, uni) if math.isfinite(c.mastery)]
    if not ratios:
        return "curriculum never solved"
    floor = ">=" if any(not math.isfinite(u.mastery) for u in uni) else ""
    unsolved = sum(not math.isfinite(c.mastery) for c in cur)
    return floor + spread(ratios, ".2f") + (f" ({unsolved} cur. never)" if unsolved else "")


def report(results: dict[str, list[Run]], seeds: int, budget: int, seconds: float) -> None:
    w = OrderedTiers
    print(
        f"{w.tiers} tiers x {w.tasks_per_family} tasks, group size {w.group_size}, batch {w.batch}, lr {w.lr}, "
        f"transfer {w.next_transfer}, budget {budget:,} episodes, {seeds} seeds ({seconds:.1f} s). "
        f"Cells: median [min, max] over seeds.\n"
    )
    print("| sampler | groups with signal | episodes until every tier p >= 0.9 | signal per 1k tokens |")
    print("|---|---:|---:|---:|")
    for name, runs in results.items():
        print(
            f"| {name} | {spread([r.signal for r in runs], '.3f')} | {spread([r.mastery for r in runs], ',.0f')} "
            f"| {spread([r.signal_per_kilotoken for r in runs], '.3f')} |"
        )
    if "curriculum" in results:
        runs = results["curriculum"]
        print(
            f"\ncurriculum calibration: predicted signal share {spread([r.predicted for r in runs], '.3f')}, "
            f"observed {spread([r.observed for r in runs], '.3f')}"
        )
    if "curriculum" in results and "uniform" in results:
        cur, uni = results["curriculum"], results["uniform"]
        share = [c.signal / u.signal for c, u in zip(cur, uni)]
        faster = sum(c.mastery < u.mastery for c, u in zip(cur, uni))
        higher = sum(s > 1 for s in share)
        print(f"curriculum / uniform, signal share: {spread(share, '.2f')} (curriculum higher on {higher}/{len(share)} seeds)")
        print(f"uniform / curriculum, episodes to all solved: {speedups(cur, uni, budget)} "
              f"(curriculum faster on {faster}/{len(cur)} seeds)")
    for other in ("curriculum (calibrated, before)", "curriculum (reach)", "curriculum (headroom)", "curriculum (binary, RFC)"):
        if "uniform" in results and other in results:
            runs, uni = results[other], results["uniform"]
            share = [c.signal / u.signal for c, u in zip(runs, uni)]
            print(f"{other} / uniform: signal share {spread(share, '.2f')}, episodes {speedups(runs, uni, budget)}")


def sweep(seeds: int, budget: int) -> None:
    """Curriculum-vs-uniform ratios as the world changes: how much the result rests on one setting."""
    print(
        f"\nsensitivity ({seeds} seeds each; median [min, max]; 'never' = not solved in the budget; "
        f">= : uniform never solved, its run counted as the whole budget)\n"
    )
    print("| transfer to next tier | logit step between tiers | signal share cur/uni | episodes uni/cur | curriculum episodes |")
    print("|---:|---:|---:|---:|---:|")
    for transfer, step in SWEEP:
        world = tiers_world(transfer, step)
        cur, uni = run("curriculum", seeds, world, budget), run("uniform", seeds, world, budget)
        share = [c.signal / u.signal for c, u in zip(cur, uni)]
        print(
            f"| {transfer} | {step} | {spread(share, '.2f')} | {speedups(cur, uni, budget)} "
            f"| {spread([c.mastery for c in cur], ',.0f')} |"
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m studies.worlds.tiers", description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=10, help="seeds per sampler (the same seeds for every sampler)")
    parser.add_argument("--sweep", type=int, default=0, metavar="SEEDS",
                        help="also vary transfer and tier steepness, with this many seeds each (e.g. 5)")
    parser.add_argument("--samplers", nargs="+", default=list(SAMPLERS), choices=list(SAMPLERS), metavar="NAME")
    parser.add_argument("--budget", type=int, default=BUDGET, help=f"episodes per run at most (default {BUDGET:,})")
    args = parser.parse_args(argv)
    if args.seeds < 1 or args.budget < 1:
        parser.error("--seeds and --budget must be >= 1")
    start = time.perf_counter()
    results = {name: run(name, args.seeds, budget=args.budget) for name in args.samplers}
    report(results, args.seeds, args.budget, time.perf_counter() - start)
    if args.sweep:
        sweep(args.sweep, args.budget)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
