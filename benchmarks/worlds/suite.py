"""Run every sampler in every world over seeds and print one table per world, plus a verdict.

Per run (the same world layout and reward stream for every sampler of a seed):
- area: the run's average of the mean p over learnable families (area under mean p, per episode);
- mastery: episodes until every learnable family has p >= 0.9 at once (else the final mean p);
and over the learning phase (until mastery, or the whole budget if never), as benchmarks/simulate_curriculum.py
does (after mastery nothing is left to learn, and a sampler that finished sooner would be charged for it):
- signal: share of groups that teach (a learnable family, successes that differ);
- wasted: share of draws on unlearnable families (dead, coin-flip);
- on >= 0.9: share of draws on families already at p >= 0.9 when drawn;
- pred/obs: the sampler's own predicted signal (the curriculum's ``predicted_signal`` metric) over the observed
  share of groups whose successes differ, both over the whole run.
Wins: seeds on which the default curriculum (or the rule named by --wins-for) does better than that row's sampler
(ties are no win).
"""

from __future__ import annotations

import argparse
import math
import random
import statistics
import time
from dataclasses import dataclass
from typing import Any, Callable

from benchmarks.worlds import peers
from benchmarks.worlds.worlds import WORLDS, World

DEFAULT = "curriculum"  # the package's default curriculum: the row the wins count for


def _curriculum(**settings: Any) -> Callable[..., peers.Peer]:
    return lambda k, g, seed, success: peers.Curriculum(k, g, seed, success, **settings)


def _peer(cls: type[peers.Peer]) -> Callable[..., peers.Peer]:
    return lambda k, g, seed, success: cls(k, g, seed, success)


SAMPLERS: dict[str, Callable[..., peers.Peer]] = {
    DEFAULT: _curriculum(),
    "curriculum binary (RFC)": _curriculum(signal="binary"),
    "curriculum variance": _curriculum(signal="variance"),
    "uniform": _peer(peers.Uniform),
    "prime-rl pools": _peer(peers.PrimeRLDifficultyPools),
    "pools 10/80/10": _peer(peers.FixedFractionPools),
    "learnability p(1-p)": _peer(peers.Learnability),
    "learning progress": _peer(peers.LearningProgress),
    "oracle (reference)": _peer(peers.Oracle),
}
REFERENCES = ("oracle (reference)",)  # shown, not competed against
OURS = (DEFAULT, "curriculum binary (RFC)", "curriculum variance")  # the package's own rules, not peers


@dataclass
class Run:
    signal: float
    area: float
    mastery: float  # episodes; inf when never
    final_p: float
    wasted: float
    on_mastered: float
    predicted: float | None
    observed: float


def simulate(world_cls: type[World], make: Callable[..., peers.Peer], seed: int, budget: int | None = None) -> Run:
    world = world_cls(seed)
    k, g = len(world.kinds), world.group_size
    sampler = make(k, g, seed, world.success_reward)
    sampler.bind(world)
    rng = random.Random(1_000_003 * seed + 17)  # the world's randomness: the same stream for every sampler
    budget = budget or world.budget
    learnable = world.learnable_index
    pending: dict[int, list[tuple[int, list[float]]]] = {}
    episodes = groups = teaching = differ = wasted = on_mastered = 0
    area = 0.0
    mastery = math.inf
    step = 0
    probs = world.probs()
    while episodes < budget:
        trained: set[int] = set()
        for family in sampler.sample(world.batch):
            p = probs[family]
            rewards, successes = world.rewards(family, p, rng)
            teaching += world.teach(family, successes)
            differ += 0 < successes < g
            wasted += not world.learnable[family]
            on_mastered += p >= 0.9
            trained.add(family)
            pending.setdefault(step + world.delay(rng), []).append((family, rewards))
            groups += 1
        for family, rewards in pending.pop(step, ()):
            sampler.update(family, rewards)
        world.after_step(step, trained, rng)
        episodes += world.batch * g
        probs = world.probs()
        mean_p = sum(probs[j] for j in learnable) / len(learnable)
        area += mean_p * world.batch * g
        if mastery == math.inf and all(probs[j] >= 0.9 for j in learnable):
            mastery = episodes
            phase = (groups, teaching, wasted, on_mastered)
        step += 1
    observed = differ / groups  # over the whole run, as the sampler's predicted_signal is
    if mastery == math.inf:
        phase = (groups, teaching, wasted, on_mastered)
    groups, teaching, wasted, on_mastered = phase
    return Run(
        signal=teaching / groups,
        area=area / episodes,
        mastery=mastery,
        final_p=mean_p,
        wasted=wasted / groups,
        on_mastered=on_mastered / groups,
        predicted=sampler.predicted_signal(),
        observed=observed,
    )


def mastery_better(a: Run, b: Run) -> bool:
    """a reached mastery sooner, or neither did and a ends with the higher mean p."""
    if a.mastery != b.mastery:
        return a.mastery < b.mastery
    return a.mastery == math.inf and a.final_p > b.final_p


def spread(values: list[float], fmt: str) -> str:
    return f"{format(statistics.median(values), fmt)} [{format(min(values), fmt)}, {format(max(values), fmt)}]"


def mastery_text(runs: list[Run]) -> str:
    solved = [r.mastery for r in runs if math.isfinite(r.mastery)]
    if len(solved) * 2 > len(runs):  # the median run reached mastery
        never = len(runs) - len(solved)
        text = f"{statistics.median(r.mastery for r in runs):,.0f} [{min(solved):,.0f}, " + (
            "never]" if never else f"{max(solved):,.0f}]"
        )
        return text + (f" {never} never" if never else "")
    return f"p {spread([r.final_p for r in runs], '.3f')} ({len(solved)} solved)"


def verdict(results: dict[str, list[Run]], hero: str = DEFAULT) -> tuple[bool, list[str]]:
    """The issue's bar for the default: a majority of seeds on signal and area against every peer, and
    mastery within 10% of the best peer's median (episodes; or the gap 1 - final p when unsolved)."""
    ours = results[hero]
    n = len(ours)
    losses = []
    competitors = [name for name in results if name not in REFERENCES and name not in OURS]
    for name in competitors:
        theirs = results[name]
        for metric in ("signal", "area"):
            wins = sum(getattr(a, metric) > getattr(b, metric) for a, b in zip(ours, theirs))
            if wins * 2 <= n:
                losses.append(f"{metric} vs {name}: {wins}/{n}")
    best = min(competitors, key=lambda name: _mastery_key(results[name]))
    if _mastery_key(ours) > _within(_mastery_key(results[best])):
        losses.append(f"mastery vs {best}: {mastery_text(ours)} against {mastery_text(results[best])}")
    return not losses, losses


def _mastery_key(runs: list[Run]) -> tuple[int, float]:
    """(0, median episodes) when the median run reached mastery, else (1, median gap 1 - final p)."""
    episodes = statistics.median(r.mastery for r in runs)
    if math.isfinite(episodes):
        return (0, episodes)
    return (1, statistics.median(1 - r.final_p for r in runs))


def _within(key: tuple[int, float]) -> tuple[int, float]:
    return (key[0], key[1] * 1.10)


def table(world_cls: type[World], results: dict[str, list[Run]], budget: int, hero: str = DEFAULT) -> str:
    ours = results[hero]
    n = len(ours)
    lines = []
    w = world_cls(0)
    kinds = {kind: w.kinds.count(kind) for kind in dict.fromkeys(w.kinds)}
    lines.append(
        f"### world `{world_cls.name}`: {' '.join(world_cls.__doc__.split(chr(10) + chr(10))[0].split())}\n"
        f"{', '.join(f'{v} {k}' for k, v in kinds.items())} families; G={w.group_size}, {w.batch} groups/step, "
        f"{budget:,} episodes, {n} seeds. Cells: median [min, max]; wins: seeds where `{hero}` beats the row.\n"
    )
    head = ("sampler", "signal", "area mean p", "mastery (episodes or final p)", "wasted", "on p>=0.9", "pred/obs",
            "wins sig/area/mast")
    lines.append("| " + " | ".join(head) + " |")
    lines.append("|" + "---|" * len(head))
    for name, runs in results.items():
        ratios = [r.predicted / r.observed for r in runs if r.predicted is not None and r.observed > 0]
        if name == hero:
            wins = "-"
        else:
            wins = "/".join(
                str(sum(x for x in column))
                for column in (
                    [a.signal > b.signal for a, b in zip(ours, runs)],
                    [a.area > b.area for a, b in zip(ours, runs)],
                    [mastery_better(a, b) for a, b in zip(ours, runs)],
                )
            )
        lines.append(
            f"| {name} | {spread([r.signal for r in runs], '.3f')} | {spread([r.area for r in runs], '.3f')} | "
            f"{mastery_text(runs)} | {spread([r.wasted for r in runs], '.3f')} | "
            f"{spread([r.on_mastered for r in runs], '.3f')} | {spread(ratios, '.2f') if ratios else 'n/a'} | {wins} |"
        )
    ok, losses = verdict(results, hero)
    lines.append(f"\nverdict: `{hero}` " + ("meets the bar" if ok else "falls short: " + "; ".join(losses)))
    return "\n".join(lines)


def summary(results: dict[str, dict[str, list[Run]]], hero: str = DEFAULT) -> str:
    """One row per world: the default's wins (signal/area/mastery) against each peer, and the verdict."""
    first = next(iter(results.values()))
    competitors = [name for name in first if name not in REFERENCES and name not in OURS]
    lines = [
        f"### summary: seeds won by `{hero}` (signal/area/mastery) out of {len(first[hero])}\n",
        "| world | " + " | ".join(competitors) + " | meets the bar |",
        "|" + "---|" * (len(competitors) + 2),
    ]
    for world_name, by_sampler in results.items():
        ours = by_sampler[hero]
        cells = []
        for name in competitors:
            theirs = by_sampler[name]
            cells.append("/".join(str(n) for n in (
                sum(a.signal > b.signal for a, b in zip(ours, theirs)),
                sum(a.area > b.area for a, b in zip(ours, theirs)),
                sum(mastery_better(a, b) for a, b in zip(ours, theirs)),
            )))
        lines.append(f"| {world_name} | " + " | ".join(cells) + f" | {'yes' if verdict(by_sampler, hero)[0] else 'no'} |")
    return "\n".join(lines)


def run_suite(
    worlds: list[str], samplers: list[str], seeds: int, scale: float = 1.0, lr_scale: float = 1.0
) -> dict[str, dict[str, list[Run]]]:
    out = {}
    for world_name in worlds:
        cls = WORLDS[world_name]
        if lr_scale != 1.0:  # the same world, learning slower (or faster)
            cls = type(cls.__name__, (cls,), {"lr": cls.lr * lr_scale})
        budget = max(cls.batch * cls.group_size, int(cls.budget * scale))
        out[world_name] = {
            name: [simulate(cls, SAMPLERS[name], seed, budget) for seed in range(seeds)] for name in samplers
        }
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=10, help="seeds per world and sampler (default 10)")
    parser.add_argument("--worlds", nargs="+", default=list(WORLDS), choices=list(WORLDS), metavar="WORLD",
                        help=f"worlds to run (default all: {', '.join(WORLDS)})")
    parser.add_argument("--samplers", nargs="+", default=list(SAMPLERS), choices=list(SAMPLERS), metavar="NAME",
                        help="samplers to run; must include the --wins-for one (default all)")
    parser.add_argument("--wins-for", default=DEFAULT, choices=list(OURS), metavar="NAME",
                        help=f"which of the package's rules the wins and the verdict are counted for: {', '.join(OURS)} "
                             f"(default {DEFAULT!r}, the package default)")
    parser.add_argument("--scale", type=float, default=1.0, help="multiply every world's episode budget (default 1)")
    parser.add_argument("--lr-scale", type=float, default=1.0,
                        help="multiply every world's learning rate (default 1; e.g. 0.4 with --scale 2.5: slower learning)")
    parser.add_argument("--quick", action="store_true",
                        help="a smoke test in seconds: 3 seeds, 10%% of each budget (numbers mean little)")
    args = parser.parse_args(argv)
    hero = args.wins_for
    if hero not in args.samplers:
        parser.error(f"--samplers must include {hero!r}: the wins are counted for it (--wins-for)")
    seeds, scale = (3, 0.1) if args.quick else (args.seeds, args.scale)
    if seeds < 1 or scale <= 0 or args.lr_scale <= 0:
        parser.error("--seeds must be >= 1, --scale and --lr-scale > 0")
    start = time.perf_counter()
    results = run_suite(args.worlds, args.samplers, seeds, scale, args.lr_scale)
    for world_name, by_sampler in results.items():
        cls = WORLDS[world_name]
        print(table(cls, by_sampler, max(cls.batch * cls.group_size, int(cls.budget * scale)), hero) + "\n")
    print(summary(results, hero))
    passed = sum(verdict(r, hero)[0] for r in results.values())
    print(f"\n`{hero}` meets the bar in {passed}/{len(results)} worlds ({time.perf_counter() - start:.1f} s)")
    return 0
