"""Calibration from real runs: what the simulator must reproduce about each task family, read from run logs.

    .venv/bin/python -m studies.worlds.calibration runs/compare-9/seed0/frontier ... [--json OUT.json]
    .venv/bin/python -m studies.worlds.calibration --simulate calibrated --samplers "GRESO (families)" --seeds 10

The second form measures the simulator's world the same way, from the groups its runs train on, so a world is
checked against real runs with the same estimators.

A run is an MLX trainer run directory (its ``log.jsonl``), or a JSONL file of flat metric dicts, one per step, as
prime-rl's orchestrator logs the adapter's ``metrics()`` (``curriculum/<env>/sampler/key/<family>/...``; set the
adapter's ``metrics_families = "all"`` so that every family is logged, and give ``--group-size``). Per family, over
all runs given:

- **predicted vs observed share of groups with signal**: observed is the share of the family's groups whose
  rewards differ (what GRPO trains on); ``binomial`` is what the curriculum's formula 1 - p^G - (1-p)^G predicts
  at the family's success rate p of the same step window (each group's p from the family's groups of the steps
  around it, itself left out); ``sampler`` is the sampler's own estimate at draw time, where it logged one.
  A ratio above 1 is over-prediction: the tasks of a family differ, so their outcomes cluster (Jensen's gap).
- **how spread per-task success is within a family**: from the group success counts, the beta-binomial
  intra-class correlation rho (0: every task of the family at the same p; 1: every task always or never solved)
  and the per-task standard deviation of p it implies, sqrt(rho p (1-p)); beside them the share of groups with no
  success, observed vs binomial.
- **how long a family without signal stays so**: the groups before its first group with signal (``never`` when it
  gave none), and its longest stretch of groups without signal.
- **how a family's signal runs out as it is trained on**: the share of groups with signal among each run's 1st-10th
  group of the family, its 11th-20th, and so on (``DRAW_BIN``), pooled over runs. A family the policy learns from
  gives less as its tasks become always solved, so a sampler that draws it more gets less from each later group.

Per-group rewards come from the MLX trainer's step lines (``group_rewards``); older logs and prime-rl metrics give
per step only how many groups a family had and how many had signal (cumulative ``key/<family>/episodes`` and
``observed_signal``), enough for the signal shares and the stretches, not for rho.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
from dataclasses import dataclass, field
from pathlib import Path

from openenv_prime.samplers.validation import has_spread
from studies.run_dirs import step_lines

SUCCESS = 1.0  # a reward at least this is a success (the curriculum's success_threshold)
TOLERANCE = 1e-6  # rewards differing by more than this give GRPO signal
WINDOW = 4  # steps either side of a group whose groups of the same family estimate its p
DRAW_BIN, DRAW_BINS = 10, 5  # signal by the family's own groups so far: bins of 10, the last open (41st on)


@dataclass
class Group:
    step: int
    signal: bool
    successes: int | None = None  # None where the log has no per-group rewards
    size: int | None = None


@dataclass
class Family:
    runs: list[list[Group]] = field(default_factory=list)  # per run, the family's groups in the order of the run
    sampler_predicted: list[tuple[float, float]] = field(default_factory=list)  # per run that logged an estimate:
    # (the sampler's mean estimate at draw time, that run's observed share), so the ratio compares the same runs


def read_run(path: Path, group_size: int = 8) -> tuple[dict[str, list[Group]], dict[str, float]]:
    """(family -> its groups in order, family -> the sampler's final predicted_signal) of one run."""
    steps = step_lines(path)  # a step logged again (a resumed run): the last line
    groups: dict[str, list[Group]] = {}
    if steps and "group_rewards" in steps[0]:
        for line in steps:
            for g in line["group_rewards"]:
                rewards = g["rewards"]
                groups.setdefault(g["key"], []).append(Group(
                    line["step"], has_spread(rewards, TOLERANCE),
                    sum(r >= SUCCESS for r in rewards), len(rewards)))
    else:
        groups = _from_cumulative(steps, group_size)
    last = _metrics(steps[-1]) if steps else {}
    predicted = {k[k.find("key/") + 4:-len("/predicted_signal")]: v for k, v in last.items()
                 if "key/" in k and k.endswith("/predicted_signal")}
    return groups, predicted


def _metrics(line: dict) -> dict[str, float]:
    return line.get("sampler", line)


def _from_cumulative(steps: list[dict], group_size: int) -> dict[str, list[Group]]:
    """Per family and step, groups and groups with signal from the cumulative per-key metrics, under any prefix
    (prime-rl logs them as ``curriculum/<env>/sampler/key/<family>/...``; its adapter logs every family's with
    ``metrics_families = "all"``). The order in a step is unknown: its groups with signal are taken first, which
    shortens stretches without signal, never lengthens them."""
    before: dict[str, tuple[float, float]] = {}
    out: dict[str, list[Group]] = {}
    for i, line in enumerate(steps):
        m = _metrics(line)
        for name, episodes in m.items():
            at = name.find("key/")
            if at < 0 or not name.endswith("/episodes"):
                continue
            prefix, family = name[:at], name[at + 4:-len("/episodes")]
            groups_total = episodes / group_size
            with_signal = m.get(f"{prefix}key/{family}/observed_signal", 0.0) * groups_total
            n0, s0 = before.get(family, (0.0, 0.0))
            n, s = round(groups_total - n0), round(with_signal - s0)
            before[family] = (groups_total, with_signal)
            out.setdefault(family, []).extend(Group(line.get("step", i + 1), k < s) for k in range(n))
    return out


def binomial_signal(p: float, g: int) -> float:
    return 1.0 - p**g - (1.0 - p) ** g


def windowed_p(groups: list[Group], i: int) -> float | None:
    """The success rate of the family's other groups within WINDOW steps of group i (None without any)."""
    step = groups[i].step
    near = [g for j, g in enumerate(groups) if j != i and abs(g.step - step) <= WINDOW and g.successes is not None]
    total = sum(g.size for g in near)
    return sum(g.successes for g in near) / total if total else None


def beta_binomial_rho(groups: list[Group], ps: list[float | None]) -> tuple[float, float] | None:
    """(rho, per-task SD of p): the method-of-moments intra-class correlation of success counts, each group against
    its windowed p (``ps``, p moves as the policy learns); None where too few groups or no spread in p."""
    counts = [(g, p) for g, p in zip(groups, ps) if g.successes is not None]
    if len(counts) < 4:
        return None
    excess, base, spread = 0.0, 0.0, []
    for g, p in counts:
        if p is None or p in (0.0, 1.0):
            continue
        share = g.successes / g.size
        excess += (share - p) ** 2 - p * (1 - p) / g.size
        base += p * (1 - p) * (1 - 1 / g.size)
        spread.append(p)
    if base == 0.0:
        return None
    rho = min(1.0, max(0.0, excess / base))
    p = statistics.mean(spread)
    return rho, math.sqrt(rho * p * (1 - p))


def stretches(run: list[Group]) -> tuple[int | None, int]:
    """(groups before the first with signal, None if never; the longest stretch of groups without signal)."""
    first = next((i for i, g in enumerate(run) if g.signal), None)
    longest = current = 0
    for g in run:
        current = 0 if g.signal else current + 1
        longest = max(longest, current)
    return first, longest


def by_own_draws(runs: list[list[Group]]) -> list[list[int]]:
    """[groups, groups with signal] per bin of each run's groups of the family in their order (DRAW_BIN a bin)."""
    bins = [[0, 0] for _ in range(DRAW_BINS)]
    for run in runs:
        for i, g in enumerate(run):
            b = bins[min(i // DRAW_BIN, DRAW_BINS - 1)]
            b[0] += 1
            b[1] += g.signal
    return bins


def calibrate(paths: list[Path], group_size: int = 8) -> dict[str, dict]:
    """Per family, over the runs at ``paths`` (``group_size``: the rollouts per group of runs logged as cumulative
    metrics, which count episodes, not groups)."""
    return calibrate_runs([read_run(path, group_size) for path in paths])


def simulated_runs(world: str, samplers: list[str], seeds: range) -> list[tuple[dict[str, list[Group]], dict[str, float]]]:
    """The groups each simulated run trained on, per family, as ``read_run`` gives a real run's (no sampler estimate)."""
    from studies.worlds import suite
    from studies.worlds.simulate import simulate
    from studies.worlds.worlds import WORLDS

    runs = []
    for name in samplers:
        for seed in seeds:
            groups: dict[str, list[Group]] = {}

            class Recorded(WORLDS[world]):  # type: ignore[misc,valid-type]
                step = 1

                def teach(self, task: int, successes: int) -> bool:
                    family = self.layout.family_of[task]
                    groups.setdefault(self.family_name(family), []).append(
                        Group(self.step, 0 < successes < self.group_size, successes, self.group_size))
                    return super().teach(task, successes)

                def after_step(self, step: int, trained: set[int], rng) -> None:
                    super().after_step(step, trained, rng)
                    self.step = step + 2  # the next step, counted from 1 as the trainer's logs do

            simulate(Recorded, suite.SAMPLERS[name], seed)
            runs.append((groups, {}))
    return runs


def calibrate_runs(read: list[tuple[dict[str, list[Group]], dict[str, float]]]) -> dict[str, dict]:
    """Per family, over runs as ``read_run`` gives them: (family -> groups, family -> the sampler's estimate)."""
    families: dict[str, Family] = {}
    for groups, predicted in read:
        for key, run in groups.items():
            fam = families.setdefault(key, Family())
            fam.runs.append(run)
            if key in predicted and run:
                fam.sampler_predicted.append((predicted[key], sum(g.signal for g in run) / len(run)))
    out = {}
    for key in sorted(families, key=_family_order):
        fam = families[key]
        every = [g for run in fam.runs for g in run]
        n = len(every)
        observed = sum(g.signal for g in every) / n if n else math.nan
        binom, zero_obs, zero_pred, rho = [], [], [], []
        for run in fam.runs:
            ps = [windowed_p(run, i) for i in range(len(run))]
            for g, p in zip(run, ps):
                if p is None or g.successes is None:
                    continue
                binom.append(binomial_signal(p, g.size))
                zero_obs.append(g.successes == 0)
                zero_pred.append((1 - p) ** g.size)
            found = beta_binomial_rho(run, ps)
            if found is not None:
                rho.append(found)
        firsts = [stretches(run) for run in fam.runs if run]
        out[key] = {
            "runs": len(fam.runs), "groups": n, "observed": observed,
            "binomial": statistics.mean(binom) if binom else None,
            "sampler": statistics.mean(p for p, _ in fam.sampler_predicted) if fam.sampler_predicted else None,
            "sampler_observed": statistics.mean(o for _, o in fam.sampler_predicted) if fam.sampler_predicted else None,
            "no_success_observed": statistics.mean(zero_obs) if zero_obs else None,
            "no_success_binomial": statistics.mean(zero_pred) if zero_pred else None,
            "success_rate": (sum(g.successes for g in every if g.successes is not None)
                             / max(1, sum(g.size for g in every if g.size))) if binom else None,
            "rho": statistics.median(r for r, _ in rho) if rho else None,
            "task_sd": statistics.median(sd for _, sd in rho) if rho else None,
            "by_own_draws": by_own_draws(fam.runs),
            "first_signal": [f for f, _ in firsts],
            "longest_without": [w for _, w in firsts],
        }
    return out


def _family_order(key: str):
    name, _, tier = key.rpartition("/")
    return (name, int(tier)) if tier.isdigit() else (key, 0)


def table(result: dict[str, dict]) -> str:
    def num(v, fmt=".2f"):
        return "-" if v is None or (isinstance(v, float) and math.isnan(v)) else format(v, fmt)

    head = ("family", "runs", "groups", "success rate", "observed signal", "binomial (ratio)", "sampler's own (ratio)",
            "no success obs / binomial", "rho", "per-task SD of p", "groups to first signal", "longest without",
            f"signal by own groups ({' / '.join(_bin_names())})")
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for key, r in result.items():
        obs = r["observed"]
        def ratio(v, o=obs):
            return f" ({v / o:.1f}x)" if v is not None and o else ""

        firsts = r["first_signal"]
        never = sum(f is None for f in firsts)
        seen = [f for f in firsts if f is not None]
        first = (f"median {statistics.median(seen):.0f}" if seen else "") + (f", never in {never} of {len(firsts)}"
                                                                            if never else "")
        lines.append(
            f"| {key} | {r['runs']} | {r['groups']} | {num(r['success_rate'])} | {num(obs)} | "
            f"{num(r['binomial'])}{ratio(r['binomial'])} | {num(r['sampler'])}{ratio(r['sampler'], r['sampler_observed'])} | "
            f"{num(r['no_success_observed'])} / {num(r['no_success_binomial'])} | {num(r['rho'])} | {num(r['task_sd'])} | "
            f"{first.lstrip(', ')} | median {statistics.median(r['longest_without']):.0f}, max {max(r['longest_without'])} | "
            f"{' / '.join(f'{s / n:.2f}' if n else '-' for n, s in r['by_own_draws'])} |")
    return "\n".join(lines)


def _bin_names() -> list[str]:
    names = [f"{b * DRAW_BIN + 1}-{(b + 1) * DRAW_BIN}" for b in range(DRAW_BINS - 1)]
    return names + [f"{(DRAW_BINS - 1) * DRAW_BIN + 1}+"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m studies.worlds.calibration", description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="*", type=Path, help="MLX run directories (with log.jsonl) or JSONL metric files")
    parser.add_argument("--simulate", metavar="WORLD", help="measure a world of the simulator instead (e.g. calibrated)")
    parser.add_argument("--samplers", nargs="+", default=["curriculum"],
                        help="with --simulate: the samplers whose runs are pooled, by their suite names")
    parser.add_argument("--seeds", type=int, default=10, help="with --simulate: runs per sampler (seeds 0..N-1)")
    parser.add_argument("--json", type=Path, help="also write the numbers here")
    parser.add_argument("--group-size", type=int, default=8,
                        help="rollouts per group, for logs of cumulative metrics only (default 8; MLX logs say)")
    args = parser.parse_args(argv)
    if args.simulate:
        result = calibrate_runs(simulated_runs(*_simulation(parser, args)))
    else:
        if not args.runs:
            parser.error("give run directories or JSONL files, or --simulate WORLD")
        missing = [str(p) for p in args.runs if not (p / "log.jsonl").is_file() and not p.is_file()]
        if missing:
            parser.error(f"no run log at {', '.join(missing)}: give MLX run directories (holding log.jsonl) or JSONL "
                         "files")
        if args.group_size < 2:
            parser.error(f"--group-size must be at least 2 (GRPO compares rollouts), got {args.group_size}")
        result = calibrate(args.runs, args.group_size)
    print(table(result))
    if args.json:
        args.json.write_text(json.dumps(result, indent=1))
    return 0


def _simulation(parser: argparse.ArgumentParser, args: argparse.Namespace) -> tuple[str, list[str], range]:
    from studies.worlds import suite
    from studies.worlds.worlds import WORLDS

    if args.simulate not in WORLDS:
        parser.error(f"--simulate {args.simulate!r}: no such world; choose one of {', '.join(WORLDS)}")
    unknown = [name for name in args.samplers if name not in suite.SAMPLERS]
    if unknown:
        parser.error(f"--samplers: unknown {', '.join(map(repr, unknown))}; choose among {', '.join(suite.SAMPLERS)}")
    if args.seeds < 1:
        parser.error(f"--seeds must be at least 1, got {args.seeds}")
    return args.simulate, args.samplers, range(args.seeds)


if __name__ == "__main__":
    raise SystemExit(main())
