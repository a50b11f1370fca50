"""Run every sampler in every world over seeds and print one table per world, plus a verdict.

Run from the repository root: ``.venv/bin/python -m studies.worlds [--seeds 10] [--worlds ...] [--quick]``.
The simulator and its measures are in ``simulate.py``, the worlds in ``worlds.py``, the peers in
``peers.py`` and ``peers2025.py``. Every sampler of a seed meets the same world layout and reward stream.
Wins: seeds on which the default curriculum (or the rule named by --wins-for) does better than that row's
sampler (ties are no win).
"""

from __future__ import annotations

import argparse
import math
import statistics
import time
from typing import Any, Callable

from studies.worlds import peers, peers2025
from studies.worlds.simulate import Run, simulate
from studies.worlds.worlds import WORLDS, World

DEFAULT = "curriculum"  # the package's default curriculum: the row the wins count for


def _peer(cls: type[peers.Peer], **options: Any) -> Callable[..., peers.Peer]:
    return lambda layout, g, seed, success: cls(layout, g, seed, success, **options)


SAMPLERS: dict[str, Callable[..., peers.Peer]] = {
    DEFAULT: peers.curriculum(),
    "curriculum reach": peers.curriculum(signal="reach"),
    "curriculum calibrated (before)": peers.curriculum(signal="calibrated"),
    "curriculum headroom": peers.curriculum(signal="headroom"),
    "curriculum binary (RFC)": peers.curriculum(signal="binary"),
    "curriculum variance": peers.curriculum(signal="variance"),
    "uniform": _peer(peers.Uniform),
    "prime-rl pools": _peer(peers.PrimeRLDifficultyPools),
    "pools 10/80/10": _peer(peers.FixedFractionPools),
    "learnability p(1-p)": _peer(peers.Learnability),
    "learning progress": _peer(peers.LearningProgress),
    "BOTS (tasks)": _peer(peers2025.BOTS, level=peers.TASKS),
    "BOTS (families)": _peer(peers2025.BOTS, level=peers.FAMILIES),
    "MoPPS (tasks)": _peer(peers2025.MoPPS, level=peers.TASKS),
    "MoPPS (families)": _peer(peers2025.MoPPS, level=peers.FAMILIES),
    "SEC": _peer(peers2025.SEC),
    "SPEED-RL": _peer(peers2025.SPEEDRL),
    "GRESO (tasks)": _peer(peers2025.GRESO, level=peers.TASKS),
    "GRESO (families)": _peer(peers2025.GRESO, level=peers.FAMILIES),
    "oracle (reference)": _peer(peers.Oracle),
}
REFERENCES = ("oracle (reference)",)  # shown, not competed against
OURS = (DEFAULT, "curriculum reach", "curriculum calibrated (before)", "curriculum headroom", "curriculum binary (RFC)", "curriculum variance")  # the package's own rules


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
        f"{', '.join(f'{v} {k}' for k, v in kinds.items())} families of {w.tasks_per_family} tasks; "
        f"G={w.group_size}, {w.batch} groups/step, "
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
        f"### summary: seeds won by `{hero}` (signal/area/mastery) out of {len(first[hero])}; its median signal share "
        f"over the best peer's\n",
        "| world | " + " | ".join(competitors) + " | signal ÷ best peer | meets the bar |",
        "|" + "---|" * (len(competitors) + 3),
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
        best = max(competitors, key=lambda name: statistics.median(r.signal for r in by_sampler[name]))
        ratio = statistics.median(r.signal for r in ours) / statistics.median(r.signal for r in by_sampler[best])
        lines.append(f"| {world_name} | " + " | ".join(cells) + f" | {ratio:.2f}x ({best}) | "
                     f"{'yes' if verdict(by_sampler, hero)[0] else 'no'} |")
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
    parser = argparse.ArgumentParser(prog="python -m studies.worlds", description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=10, help="seeds per world and sampler (default 10)")
    parser.add_argument("--worlds", nargs="+", default=list(WORLDS), choices=list(WORLDS), metavar="WORLD",
                        help=f"worlds to run (default all: {', '.join(WORLDS)})")
    parser.add_argument("--samplers", nargs="+", default=list(SAMPLERS), choices=list(SAMPLERS), metavar="NAME",
                        help="samplers to run; must include the --wins-for one (default all)")
    parser.add_argument("--wins-for", nargs="+", default=[DEFAULT], choices=list(OURS), metavar="NAME",
                        help=f"which of the package's rules the wins and the verdict are counted for: {', '.join(OURS)} "
                             f"(default {DEFAULT!r}, the package default); several: the tables for the first, a summary "
                             f"for each, all from the same runs")
    parser.add_argument("--scale", type=float, default=1.0, help="multiply every world's episode budget (default 1)")
    parser.add_argument("--lr-scale", type=float, default=1.0,
                        help="multiply every world's learning rate (default 1; e.g. 0.4 with --scale 2.5: slower learning)")
    parser.add_argument("--quick", action="store_true",
                        help="a smoke test in seconds: 3 seeds, 10%% of each budget (numbers mean little)")
    args = parser.parse_args(argv)
    heroes = args.wins_for
    missing = [hero for hero in heroes if hero not in args.samplers]
    if missing:
        parser.error(f"--samplers must include {missing[0]!r}: the wins are counted for it (--wins-for)")
    seeds, scale = (3, 0.1) if args.quick else (args.seeds, args.scale)
    if seeds < 1 or scale <= 0 or args.lr_scale <= 0:
        parser.error("--seeds must be >= 1, --scale and --lr-scale > 0")
    start = time.perf_counter()
    results = run_suite(args.worlds, args.samplers, seeds, scale, args.lr_scale)
    for world_name, by_sampler in results.items():
        cls = WORLDS[world_name]
        print(table(cls, by_sampler, max(cls.batch * cls.group_size, int(cls.budget * scale)), heroes[0]) + "\n")
    seconds = time.perf_counter() - start
    for hero in heroes:
        print(summary(results, hero))
        passed = sum(verdict(r, hero)[0] for r in results.values())
        print(f"\n`{hero}` meets the bar in {passed}/{len(results)} worlds ({seconds:.1f} s)\n")
    return 0
