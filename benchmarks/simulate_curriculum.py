"""A learning simulator: does choosing tasks by predicted GRPO signal make a policy learn faster?

K task families (tiers) of rising difficulty. The policy's skill on tier k is a latent logit z_k, its
success probability sigmoid(z_k). Each step the sampler picks a batch of tasks; each gets a group of G
binary rewards drawn from the latent probability of its tier. A group teaches only if its rewards
differ (GRPO's advantage is zero otherwise): then z_k rises by ``lr * 4 m (1 - m)`` (m = the group's
mean reward: a 50/50 group teaches most), and the next harder tier gains ``transfer`` times that.
Updates reach the sampler after the whole batch is scored, as in a real trainer. Rollouts cost tokens,
more on harder tiers; the samplers count cost but never see a latent probability: they get only
(key, rewards, costs), exactly what a trainer would give them.

Reported per sampler over seeds: share of groups with signal (until every tier reaches p >= 0.9, or the
budget), episodes until every tier reaches p >= 0.9, and for the curriculum its predicted signal share
(the formula at draw time) beside the observed one. Then curriculum-vs-uniform ratios with their spread.

Run: .venv/bin/python benchmarks/simulate_curriculum.py [--seeds 10] [--families 10] [--sweep 5] ...
"""

from __future__ import annotations

import argparse
import math
import random
import statistics
import time
from dataclasses import dataclass

from openenv_prime.samplers import CurriculumSampler, SequentialSampler, Task, UniformSampler


@dataclass(frozen=True)
class World:
    families: int = 10
    tasks_per_family: int = 50
    group_size: int = 8
    batch: int = 16  # groups per step; the sampler hears about them only after the step
    start_logit: float = 2.0  # tier 0 starts at p = 0.88 ...
    logit_step: float = 1.0  # ... each harder tier one logit lower (tier 9: p = 0.0009)
    lr: float = 0.05
    transfer: float = 0.5
    solved_p: float = 0.9
    budget: int = 400_000  # episodes (rollouts) per run


@dataclass
class Run:
    episodes_to_solve: float  # inf when the budget ran out first
    signal_share: float
    signal_per_kilotoken: float
    predicted_signal: float | None
    observed_signal: float


def sigmoid(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-x))


def make_pool(world: World, order: str, seed: int) -> list[Task]:
    tasks = [
        Task("train", tier * world.tasks_per_family + i, str(tier), None)
        for tier in range(world.families)
        for i in range(world.tasks_per_family)
    ]
    if order == "shuffled":
        random.Random(seed).shuffle(tasks)
    return tasks


SAMPLERS = {
    "sequential (tier order)": lambda w, s: SequentialSampler(make_pool(w, "tiers", s)),
    "sequential (shuffled)": lambda w, s: SequentialSampler(make_pool(w, "shuffled", s)),
    "uniform": lambda w, s: UniformSampler(make_pool(w, "tiers", s), seed=s),
    "curriculum": lambda w, s: CurriculumSampler(make_pool(w, "tiers", s), group_size=w.group_size, seed=s),
    "curriculum (binary, RFC)": lambda w, s: CurriculumSampler(
        make_pool(w, "tiers", s), group_size=w.group_size, signal="binary", seed=s
    ),
}


def simulate(world: World, name: str, seed: int) -> Run:
    sampler = SAMPLERS[name](world, seed)
    rng = random.Random(10_000 + seed)  # the world's randomness, the same stream for every sampler
    logits = [world.start_logit - world.logit_step * k for k in range(world.families)]
    episodes = groups = with_signal = 0
    tokens = 0.0
    solved_at = math.inf
    g = world.group_size
    while episodes < world.budget:
        probs = [sigmoid(z) for z in logits]
        scored = []
        for task in sampler.sample(world.batch):
            tier = int(task.key)
            rewards = [1.0 if rng.random() < probs[tier] else 0.0 for _ in range(g)]
            costs = [100.0 * (1 + tier) * (0.5 + rng.random()) for _ in range(g)]
            scored.append((task.key, tier, rewards, costs))
        for key, tier, rewards, costs in scored:
            sampler.update(key, rewards, costs)
            mean = sum(rewards) / g
            gain = world.lr * 4 * mean * (1 - mean)
            if gain > 0:
                with_signal += 1
                logits[tier] += gain
                if tier + 1 < world.families:
                    logits[tier + 1] += world.transfer * gain
            episodes += g
            groups += 1
            tokens += sum(costs)
        if min(sigmoid(z) for z in logits) >= world.solved_p:
            solved_at = episodes
            break
    metrics = sampler.metrics(per_key=False)
    return Run(
        episodes_to_solve=solved_at,
        signal_share=with_signal / groups,
        signal_per_kilotoken=1000 * with_signal / tokens,
        predicted_signal=metrics.get("predicted_signal"),
        observed_signal=metrics["observed_signal"],
    )


def spread(values: list[float], fmt: str) -> str:
    finite = [v for v in values if math.isfinite(v)]
    if not finite:
        return "never"
    body = f"{format(statistics.median(values), fmt)} [{format(min(values), fmt)}, {format(max(finite), fmt)}]"
    missed = len(values) - len(finite)
    return body + (f" ({missed} never)" if missed else "")


def speedups(cur: list[Run], uni: list[Run], budget: int) -> str:
    """Uniform's episodes-to-solve over the curriculum's, per seed; an unsolved uniform run counts as the
    whole budget, making that ratio a floor (marked >=)."""
    ratios = [
        min(u.episodes_to_solve, budget) / c.episodes_to_solve
        for c, u in zip(cur, uni)
        if math.isfinite(c.episodes_to_solve)
    ]
    if not ratios:
        return "curriculum never solved"
    floor = ">=" if any(not math.isfinite(u.episodes_to_solve) for u in uni) else ""
    unsolved = sum(not math.isfinite(c.episodes_to_solve) for c in cur)
    return floor + spread(ratios, ".2f") + (f" ({unsolved} cur. never)" if unsolved else "")


def report(results: dict[str, list[Run]], world: World, seeds: int, seconds: float) -> None:
    print(
        f"{world.families} tiers x {world.tasks_per_family} tasks, group size {world.group_size}, batch {world.batch}, "
        f"lr {world.lr}, transfer {world.transfer}, budget {world.budget:,} episodes, {seeds} seeds "
        f"({seconds:.1f} s). Cells: median [min, max] over seeds."
    )
    header = f"{'sampler':24} {'groups with signal':>26} {'episodes to all p>=0.9':>34} {'signal per 1k tokens':>26}"
    print(header)
    print("-" * len(header))
    for name, runs in results.items():
        print(
            f"{name:24} {spread([r.signal_share for r in runs], '.3f'):>26} "
            f"{spread([r.episodes_to_solve for r in runs], ',.0f'):>34} "
            f"{spread([r.signal_per_kilotoken for r in runs], '.3f'):>26}"
        )
    if "curriculum" in results:
        runs = results["curriculum"]
        print(
            f"\ncurriculum calibration: predicted signal share {spread([r.predicted_signal for r in runs], '.3f')}, "
            f"observed {spread([r.observed_signal for r in runs], '.3f')}"
        )
    if "curriculum" in results and "uniform" in results:
        cur, uni = results["curriculum"], results["uniform"]
        share = [c.signal_share / u.signal_share for c, u in zip(cur, uni)]
        faster = sum(c.episodes_to_solve < u.episodes_to_solve for c, u in zip(cur, uni))
        higher = sum(s > 1 for s in share)
        print(f"curriculum / uniform, signal share:          {spread(share, '.2f')}  (curriculum higher on {higher}/{len(share)} seeds)")
        print(f"uniform / curriculum, episodes to all solved: {speedups(cur, uni, world.budget)}  (curriculum faster on {faster}/{len(cur)} seeds)")


SWEEP = (  # (transfer, logit_step): how much easier tiers help harder ones, and how steep the tiers are
    (0.0, 1.0), (0.25, 1.0), (0.5, 1.0), (1.0, 1.0), (0.5, 0.5), (0.5, 1.5),
)


def sweep(world: World, seeds: int) -> None:
    """Curriculum-vs-uniform ratios as the world changes: how much the result rests on one setting."""
    print(
        f"\nsensitivity ({seeds} seeds each; median [min, max]; 'never' = not solved in the budget; "
        f">= : uniform never solved, its run counted as the whole budget)"
    )
    header = f"{'transfer':>8} {'logit step':>10} {'signal share cur/uni':>24} {'episodes uni/cur':>26} {'cur episodes':>30}"
    print(header)
    print("-" * len(header))
    for transfer, step in SWEEP:
        w = World(**dict(vars(world), transfer=transfer, logit_step=step))
        cur = [simulate(w, "curriculum", seed) for seed in range(seeds)]
        uni = [simulate(w, "uniform", seed) for seed in range(seeds)]
        share = [c.signal_share / u.signal_share for c, u in zip(cur, uni)]
        speed_text = speedups(cur, uni, w.budget)
        print(
            f"{transfer:>8} {step:>10} {spread(share, '.2f'):>24} {speed_text:>26} "
            f"{spread([c.episodes_to_solve for c in cur], ',.0f'):>30}"
        )


def main(argv: list[str] | None = None) -> int:
    defaults = World()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=10, help="seeds per sampler (the same seeds for every sampler)")
    parser.add_argument("--sweep", type=int, default=0, metavar="SEEDS",
                        help="also vary transfer and tier steepness, with this many seeds each (e.g. 5)")
    parser.add_argument("--samplers", nargs="+", default=list(SAMPLERS), choices=list(SAMPLERS), metavar="NAME")
    for field, value in vars(defaults).items():
        parser.add_argument("--" + field.replace("_", "-"), type=type(value), default=value, help=f"(default {value})")
    args = parser.parse_args(argv)
    world = World(**{f: getattr(args, f) for f in vars(defaults)})
    start = time.perf_counter()
    results = {name: [simulate(world, name, seed) for seed in range(args.seeds)] for name in args.samplers}
    report(results, world, args.seeds, time.perf_counter() - start)
    if args.sweep:
        sweep(world, args.sweep)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
