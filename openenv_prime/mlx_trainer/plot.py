"""Learning curves from trainer run directories: per-family eval accuracy against episodes and
against generated tokens, one colour per family and one line style per run, so a curriculum run
and a uniform run on the same tasks can be read off one PNG."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

_STYLES = ("-", "--", ":", "-.")
_OVERALL = "all"


@dataclass
class RunCurves:
    """The eval history of one run: for each family, accuracy at each eval, in step order."""

    name: str
    steps: list[int] = field(default_factory=list)
    episodes: list[int] = field(default_factory=list)
    tokens: list[int] = field(default_factory=list)
    accuracy: dict[str, list[float | None]] = field(default_factory=dict)
    tasks: dict[str, int] = field(default_factory=dict)  # eval tasks per family at the last eval
    split: str = "test"  # the split the evals ran on (the run's environment.test_split)


def load_run(run_dir: Path, name: str | None = None) -> RunCurves:
    """Read the eval lines of RUN_DIR/log.jsonl. A later eval at the same step (a resumed run
    re-evaluating) replaces the earlier one; a torn last line (a killed run) is ignored."""
    log = Path(run_dir) / "log.jsonl"
    if not log.is_file():
        raise FileNotFoundError(f"{run_dir}: no log.jsonl; pass a run directory written by `openenv-prime train`")
    lines = log.read_text().splitlines()
    evals: dict[int, dict] = {}
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as err:
            if number == len(lines):
                break
            raise ValueError(f"{log}:{number}: not a JSON line ({err.msg}); the log is damaged") from None
        if record.get("type") == "eval":
            evals[int(record["step"])] = record
    if not evals:
        raise ValueError(f"{log}: no eval lines yet; the trainer evaluates at step 0, every `eval.every` steps and at the end")
    curves = RunCurves(name or Path(run_dir).resolve().name)
    families = sorted({f for r in evals.values() for f in r["accuracy"]}, key=_family_order)
    curves.accuracy = {f: [] for f in [*families, _OVERALL]}
    for step in sorted(evals):
        record = evals[step]
        curves.steps.append(step)
        curves.episodes.append(int(record["episodes"]))
        curves.tokens.append(int(record["tokens"]))
        for f in families:
            curves.accuracy[f].append(record["accuracy"].get(f))
        curves.accuracy[_OVERALL].append(record.get("overall"))
    curves.tasks = {f: int(n) for f, n in evals[max(evals)].get("n", {}).items()}
    curves.split = _eval_split(Path(run_dir))
    return curves


def _eval_split(run_dir: Path) -> str:
    """The run's environment.test_split from RUN_DIR/config.toml ("test" when there is none)."""
    import tomllib

    try:
        return tomllib.loads((run_dir / "config.toml").read_text())["environment"]["test_split"]
    except (OSError, KeyError, tomllib.TOMLDecodeError):
        return "test"


def plot_runs(run_dirs: list[Path], out: Path | None = None) -> Path:
    """Write the two-panel PNG for `run_dirs` to `out` (default: the first run's plots/ folder)
    and return its path."""
    if not run_dirs:
        raise ValueError("plot_runs: no run directories given")
    names = _labels([Path(d) for d in run_dirs])
    runs = [load_run(Path(d), name) for d, name in zip(run_dirs, names)]
    if out is None:
        stem = "accuracy" if len(runs) == 1 else "accuracy_" + "_vs_".join(names).replace("/", "-")
        out = Path(run_dirs[0]) / "plots" / f"{stem}.png"
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    build_figure(runs).savefig(out, dpi=120)
    return out


def build_figure(runs: list[RunCurves]):
    """A standalone matplotlib Figure (rendered by Agg, no pyplot state): left panel against
    episodes, right against generated tokens."""
    import matplotlib
    from matplotlib.figure import Figure
    from matplotlib.lines import Line2D
    from matplotlib.ticker import EngFormatter

    families = sorted({f for r in runs for f in r.accuracy if f != _OVERALL}, key=_family_order)
    palette = matplotlib.colormaps["tab10"]
    colours = {f: palette(i % 10) for i, f in enumerate(families)} | {_OVERALL: "black"}
    figure = Figure(figsize=(13, 5.2), layout="constrained")
    axes = figure.subplots(1, 2, sharey=True)
    for ax, (xlabel, attr) in zip(axes, (("episodes", "episodes"), ("generated tokens", "tokens"))):
        for i, run in enumerate(runs):
            x = getattr(run, attr)
            for family, ys in run.accuracy.items():
                points = [(a, b) for a, b in zip(x, ys) if b is not None]
                if not points:
                    continue
                ax.plot(*zip(*points), linestyle=_STYLES[i % len(_STYLES)], color=colours[family], marker="o",
                        markersize=3, linewidth=2.2 if family == _OVERALL else 1.4,
                        zorder=1.5 if family == _OVERALL else 2, label=f"{run.name} · {family}")
        ax.set_xlabel(xlabel)
        ax.xaxis.set_major_formatter(EngFormatter(sep=""))
        ax.grid(alpha=0.3)
        ax.set_ylim(-0.03, 1.03)
    axes[0].set_ylabel("greedy eval accuracy")
    figure.suptitle("Per-family eval accuracy" + (": " + " vs ".join(r.name for r in runs) if len(runs) > 1 else f": {runs[0].name}"))
    family_handles = [Line2D([], [], color=colours[f], linewidth=2, label=f"family {f}{_tasks_note(runs, f)}") for f in families]
    family_handles.append(Line2D([], [], color="black", linewidth=2.2, label="all families"))
    if len(runs) > 1:
        run_handles = [Line2D([], [], color="grey", linestyle=_STYLES[i % len(_STYLES)], linewidth=2, label=r.name)
                       for i, r in enumerate(runs)]
        axes[1].add_artist(axes[1].legend(handles=run_handles, loc="lower left", bbox_to_anchor=(1.01, 0.0), title="line style"))
    axes[1].legend(handles=family_handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), title="colour")
    return figure


def _tasks_note(runs: list[RunCurves], family: str) -> str:
    """A legend note "(n=20)" when every run evaluated the family on the same number of tasks."""
    counts = {r.tasks.get(family) for r in runs}
    return f" (n={counts.pop()})" if len(counts) == 1 and None not in counts else ""


def eval_headline(evals: RunCurves) -> str | None:
    """One line on what the greedy eval says: the family whose accuracy on the eval split rose most from the first
    eval to the last, with its number of test tasks (each task moves the accuracy by 1/n, so the size is the noise
    scale), and how many families it was picked from. None before a second eval."""
    changes = [(ys[-1] - ys[0], f, ys[0], ys[-1]) for f, ys in evals.accuracy.items()
               if f != _OVERALL and len(ys) > 1 and ys[0] is not None and ys[-1] is not None]
    if not changes:
        return None
    gain, family, first, last = max(changes, key=lambda c: c[0])
    n = evals.tasks.get(family)
    size = f", {n} tasks" if n else ""
    picked = f" (best of {len(changes)} families)" if len(changes) > 1 else ""
    return (f"{evals.split}-split eval, step {evals.steps[0]} -> {evals.steps[-1]}: family {family} "
            f"{first:.2f} -> {last:.2f} ({gain:+.2f}{size}){picked}")


def _labels(run_dirs: list[Path]) -> list[str]:
    """Run directory names, with the parent folder added where two runs share a name."""
    names = [d.resolve().name for d in run_dirs]
    return [f"{d.resolve().parent.name}/{n}" if names.count(n) > 1 else n for d, n in zip(run_dirs, names)]


def _family_order(family: str):
    return (0, float(family), "") if _is_number(family) else (1, 0.0, family)


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


# ---- what the sampler did: draws, estimated p, sampled reward and signal per step ---------------------


@dataclass
class RunSteps:
    """The step history of one run, per step and per family."""

    name: str
    steps: list[int] = field(default_factory=list)
    reward: list[float] = field(default_factory=list)
    groups: list[int] = field(default_factory=list)
    with_signal: list[int] = field(default_factory=list)
    draws: dict[str, list[int]] = field(default_factory=dict)  # episodes of each family in each step
    p: dict[str, list[float | None]] = field(default_factory=dict)  # estimated success rate after each step
    p_source: str = "sampler"  # "sampler": the curriculum's own p; "observed": running mean of sampled reward


def load_steps(run_dir: Path, name: str | None = None) -> RunSteps:
    """Read the step lines of RUN_DIR/log.jsonl. Draws per family come from the sampler's cumulative
    per-key episode counts (differences between steps), or from the step's per-family rewards; the
    estimated p is the sampler's own (``key/<family>/p``) or, for samplers without one, the running
    mean of the family's sampled reward."""
    lines = (Path(run_dir) / "log.jsonl").read_text().splitlines()
    records: dict[int, dict] = {}
    for number, line in enumerate(lines, 1):
        try:
            record = json.loads(line) if line.strip() else {}
        except json.JSONDecodeError:
            if number == len(lines):
                break
            raise ValueError(f"{run_dir}/log.jsonl:{number}: not a JSON line; the log is damaged") from None
        if record.get("type") == "step":
            records[int(record["step"])] = record
    if not records:
        raise ValueError(f"{run_dir}/log.jsonl: no step lines yet")
    out = RunSteps(name or Path(run_dir).resolve().name)
    families = sorted({k[len("key/"):].rpartition("/")[0] for r in records.values() for k in r.get("sampler", {})
                       if k.startswith("key/")}
                      | {f for r in records.values() for f in r.get("family_reward", {})}, key=_family_order)
    out.draws = {f: [] for f in families}
    out.p = {f: [] for f in families}
    has_p = any(k.endswith("/p") for r in records.values() for k in r.get("sampler", {}))
    out.p_source = "sampler" if has_p else "observed"
    previous: dict[str, float] = {}
    sums: dict[str, float] = {f: 0.0 for f in families}
    counts: dict[str, int] = {f: 0 for f in families}
    for step in sorted(records):
        r = records[step]
        metrics = r.get("sampler", {})
        out.steps.append(step)
        out.reward.append(float(r["reward"]))
        out.groups.append(int(r.get("groups", 0)))
        out.with_signal.append(int(r.get("groups_with_signal", 0)))
        for f in families:
            key = f"key/{f}/episodes"
            if key in metrics:
                n = int(round(metrics[key] - previous.get(key, 0.0)))
                previous[key] = metrics[key]
            else:  # no per-key count logged (a sampler without them): the family was drawn or not
                n = 1 if f in r.get("family_reward", {}) else 0
            out.draws[f].append(n)
            if f in r.get("family_reward", {}) and n:
                sums[f] += r["family_reward"][f] * n
                counts[f] += n
            if has_p:
                out.p[f].append(metrics.get(f"key/{f}/p"))
            else:
                out.p[f].append(sums[f] / counts[f] if counts[f] else None)
    return out


def plot_sampler_panel(run_dir: Path, out: Path | None = None) -> Path:
    """Write RUN_DIR/plots/curriculum.png: where the sampler put its draws per family over time, each
    family's estimated p, sampled reward and groups with signal per step, and the eval curves."""
    run_dir = Path(run_dir)
    out = Path(out) if out is not None else run_dir / "plots" / "curriculum.png"
    out.parent.mkdir(parents=True, exist_ok=True)
    steps = load_steps(run_dir)
    try:
        evals = load_run(run_dir)
    except ValueError:
        evals = None
    build_sampler_figure(steps, evals).savefig(out, dpi=110)
    return out


def build_sampler_figure(steps: RunSteps, evals: RunCurves | None):
    import matplotlib
    from matplotlib.figure import Figure

    families = list(steps.draws)
    palette = matplotlib.colormaps["tab10"]
    colours = {f: palette(i % 10) for i, f in enumerate(families)}
    figure = Figure(figsize=(13, 8.5), layout="constrained")
    (draws_ax, p_ax), (reward_ax, eval_ax) = figure.subplots(2, 2, sharex=True)
    x = steps.steps
    totals = [sum(steps.draws[f][i] for f in families) or 1 for i in range(len(x))]
    shares = [[steps.draws[f][i] / totals[i] for i in range(len(x))] for f in families]
    bottom = [0.0] * len(x)
    for f, share in zip(families, shares):
        draws_ax.bar(x, share, bottom=bottom, width=0.9, color=colours[f], label=f"family {f}")
        bottom = [b + v for b, v in zip(bottom, share)]
    draws_ax.set_ylim(0, 1)
    draws_ax.set_ylabel("share of the step's episodes")
    draws_ax.set_title("where the sampler put its draws")
    draws_ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), title="family")
    for f in families:
        points = [(a, b) for a, b in zip(x, steps.p[f]) if b is not None]
        if points:
            p_ax.plot(*zip(*points), color=colours[f], marker="o", markersize=2.5, linewidth=1.4, label=f"family {f}")
    p_ax.set_ylim(-0.03, 1.03)
    p_ax.set_ylabel("estimated p (success rate)")
    p_ax.set_title("the curriculum's estimate of p per family" if steps.p_source == "sampler"
                   else "observed success rate per family (running mean of sampled reward)")
    bars = reward_ax.twinx()
    bars.bar(x, steps.groups, color="0.85", width=0.8, label="groups")
    bars.bar(x, steps.with_signal, color="tab:green", alpha=0.6, width=0.8, label="groups with signal")
    bars.set_ylabel("groups per step")
    bars.set_ylim(0, max(steps.groups or [1]) * 2.2)
    reward_ax.set_zorder(bars.get_zorder() + 1)
    reward_ax.patch.set_visible(False)
    reward_ax.plot(x, steps.reward, color="black", marker="o", markersize=2.5, linewidth=1.2, label="sampled reward")
    window = 4
    smooth = [sum(steps.reward[max(0, i - window + 1):i + 1]) / len(steps.reward[max(0, i - window + 1):i + 1])
              for i in range(len(x))]
    reward_ax.plot(x, smooth, color="tab:red", linewidth=2.0, label=f"mean of last {window} steps")
    reward_ax.set_ylim(-0.03, 1.03)
    reward_ax.set_ylabel("mean sampled reward")
    reward_ax.set_xlabel("step")
    reward_ax.set_title("sampled reward and groups with signal per step")
    handles = reward_ax.get_legend_handles_labels()
    more = bars.get_legend_handles_labels()
    reward_ax.legend(handles[0] + more[0], handles[1] + more[1], loc="upper left", fontsize=8)
    if evals is not None:
        for f, ys in evals.accuracy.items():
            points = [(a, b) for a, b in zip(evals.steps, ys) if b is not None]
            if points:
                eval_ax.plot(*zip(*points), color=colours.get(f, "black"), marker="o", markersize=3,
                             linewidth=2.2 if f == _OVERALL else 1.4,
                             label=("all families" if f == _OVERALL else f"family {f}") + _tasks_note([evals], f))
        eval_ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), title="greedy eval")
    eval_ax.set_ylim(-0.03, 1.03)
    eval_ax.set_ylabel("greedy eval accuracy")
    eval_ax.set_xlabel("step")
    eval_ax.set_title("per-family eval accuracy")
    for ax in (draws_ax, p_ax, reward_ax, eval_ax):
        ax.grid(alpha=0.3)
    headline = eval_headline(evals) if evals is not None else None
    figure.suptitle(f"What the sampler did: {steps.name}" + (f"\n{headline}" if headline else ""))
    return figure


def summarize(run_dir: Path) -> str:
    """A few lines that say what moved in a run: draw shares, estimated p, sampled reward, groups
    with signal and eval accuracy, first quarter against last quarter of the run."""
    steps = load_steps(run_dir)
    n = len(steps.steps)
    q = max(1, n // 4)
    first, last = slice(0, q), slice(n - q, n)

    def share(f: str, part: slice) -> float:
        total = sum(sum(steps.draws[g][part]) for g in steps.draws) or 1
        return sum(steps.draws[f][part]) / total

    def mean(values: list[float]) -> float:
        return sum(values) / len(values) if values else 0.0

    lo, hi = steps.steps[first][0], steps.steps[first][-1]
    lo2, hi2 = steps.steps[last][0], steps.steps[last][-1]
    lines = [f"What moved (steps {lo}-{hi} -> {lo2}-{hi2}):"]
    draw_parts = [f"{f} {share(f, first):.0%}->{share(f, last):.0%}" for f in steps.draws]
    lines.append("  draws per family:    " + ", ".join(draw_parts))
    label = "estimated p" if steps.p_source == "sampler" else "observed p"
    p_parts = []
    for f, values in steps.p.items():
        known = [v for v in values if v is not None]
        if known:
            p_parts.append(f"{f} {known[0]:.2f}->{known[-1]:.2f}")
    lines.append(f"  {label} per family: " + ", ".join(p_parts))
    lines.append(f"  sampled reward:      {mean(steps.reward[first]):.2f} -> {mean(steps.reward[last]):.2f}")
    lines.append(f"  groups with signal:  {sum(steps.with_signal[first])} of {sum(steps.groups[first])} -> "
                 f"{sum(steps.with_signal[last])} of {sum(steps.groups[last])}")
    try:
        evals = load_run(run_dir)
    except ValueError:
        evals = None
    if evals is not None and len(evals.steps) > 1:
        parts = [f"{f} {ys[0]:.2f}->{ys[-1]:.2f}" for f, ys in evals.accuracy.items()
                 if ys and ys[0] is not None and ys[-1] is not None]
        lines.append(f"  greedy eval (step {evals.steps[0]} -> {evals.steps[-1]}): " + ", ".join(parts))
        headline = eval_headline(evals)
        if headline:
            lines.append(f"  {headline}")
    return "\n".join(lines)


def plot_compare(run_dirs: list[Path], out: Path) -> Path:
    """Curriculum vs uniform over seeds on one PNG: sampled reward (mean of the last 4 steps),
    cumulative groups with signal, overall greedy eval accuracy and the first family's draw share;
    one colour per sampler, one line style per seed."""
    import matplotlib
    from matplotlib.figure import Figure

    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    samplers = sorted({Path(r).name for r in run_dirs})
    colours = {s: matplotlib.colormaps["tab10"](i) for i, s in enumerate(samplers)}
    seeds = sorted({Path(r).parent.name for r in run_dirs})
    figure = Figure(figsize=(13, 8.5), layout="constrained")
    (reward_ax, signal_ax), (eval_ax, share_ax) = figure.subplots(2, 2, sharex=True)
    for run in map(Path, run_dirs):
        steps = load_steps(run)
        style = _STYLES[seeds.index(run.parent.name) % len(_STYLES)]
        colour, label = colours[run.name], f"{run.name} {run.parent.name}"
        x = steps.steps
        smooth = [sum(steps.reward[max(0, i - 3):i + 1]) / len(steps.reward[max(0, i - 3):i + 1]) for i in range(len(x))]
        reward_ax.plot(x, smooth, color=colour, linestyle=style, linewidth=1.6, label=label)
        cumulative, total = [], 0
        for v in steps.with_signal:
            total += v
            cumulative.append(total)
        signal_ax.plot(x, cumulative, color=colour, linestyle=style, linewidth=1.6, label=label)
        first = next(iter(steps.draws))
        shares = [steps.draws[first][i] / (sum(steps.draws[f][i] for f in steps.draws) or 1) for i in range(len(x))]
        share_smooth = [sum(shares[max(0, i - 3):i + 1]) / len(shares[max(0, i - 3):i + 1]) for i in range(len(x))]
        share_ax.plot(x, share_smooth, color=colour, linestyle=style, linewidth=1.6, label=label)
        try:
            evals = load_run(run)
            eval_ax.plot(evals.steps, evals.accuracy[_OVERALL], color=colour, linestyle=style, marker="o",
                         markersize=3, linewidth=1.6, label=label)
        except ValueError:
            pass
    reward_ax.set_ylabel("sampled reward (mean of last 4 steps)")
    signal_ax.set_ylabel("groups with signal (cumulative)")
    eval_ax.set_ylabel("greedy eval accuracy, all families")
    eval_ax.set_ylim(bottom=0)
    for ax in (reward_ax, share_ax):
        ax.set_ylim(-0.02, 1.02 if ax is share_ax else None)
    share_ax.set_ylabel(f"share of draws on family {first} (mean of last 4 steps)")
    for ax in (reward_ax, signal_ax, eval_ax, share_ax):
        ax.grid(alpha=0.3)
    for ax in (eval_ax, share_ax):
        ax.set_xlabel("step")
    signal_ax.legend(loc="upper left", fontsize=8)
    figure.suptitle("Curriculum vs uniform: " + ", ".join(seeds))
    figure.savefig(out, dpi=110)
    return out
