"""Learning curves from eval logs (an `EvalHarness` JSONL log, or an MLX run's log.jsonl): per-family eval accuracy
against optimizer steps, against the sampler's episodes and against its cost (e.g. generated tokens), one colour per
family and one line style per run, so a curriculum run and a uniform run on the same tasks can be read off one PNG
(`openenv-prime plot`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from openenv_prime.evaluation.runlog import RunLog, read_log

STYLES = ("-", "--", ":", "-.")
OVERALL = "all"


@dataclass
class RunCurves:
    """The eval history of one run: for each family, accuracy at each eval, in step order."""

    name: str
    steps: list[int] = field(default_factory=list)
    episodes: list[float | None] = field(default_factory=list)
    cost: list[float | None] = field(default_factory=list)
    accuracy: dict[str, list[float | None]] = field(default_factory=dict)
    tasks: dict[str, int] = field(default_factory=dict)  # eval tasks per family at the last eval
    split: str = "test"  # the split the evals ran on


def load_run(run_dir: Path, name: str | None = None) -> RunCurves:
    """The eval curves of a run directory or an eval log (see `eval_curves`)."""
    return eval_curves(read_log(run_dir), name)


def eval_curves(log: RunLog, name: str | None = None) -> RunCurves:
    """The eval history of a run's log; a ValueError before its first eval."""
    evals = log.evals
    if not evals:
        raise ValueError(f"{log.run_dir}: no eval lines yet; evals are logged on their schedule (the trainer's: step 0, "
                         "every `eval.every` steps and the end)")
    curves = RunCurves(name or log.run_dir.resolve().name)
    families = sorted({f for r in evals.values() for f in r["accuracy"]}, key=family_order)
    curves.accuracy = {f: [] for f in [*families, OVERALL]}
    for step in sorted(evals):
        record = evals[step]
        curves.steps.append(step)
        curves.episodes.append(record.get("episodes"))
        # the sampler's cost; logs written before the eval harness logged the trainer's generated tokens, the same sum
        curves.cost.append(record.get("cost", record.get("tokens")))
        for f in families:
            curves.accuracy[f].append(record["accuracy"].get(f))
        curves.accuracy[OVERALL].append(record.get("overall"))
    curves.tasks = {f: int(n) for f, n in evals[max(evals)].get("n", {}).items()}
    curves.split = evals[max(evals)].get("split") or _eval_split(log.run_dir)
    return curves


def _eval_split(run_dir: Path) -> str:
    """The run's environment.test_split from RUN_DIR/config.toml ("test" when there is none)."""
    import tomllib

    try:
        return tomllib.loads((run_dir / "config.toml").read_text())["environment"]["test_split"]
    except (OSError, KeyError, tomllib.TOMLDecodeError):
        return "test"


def plot_runs(run_dirs: list[Path], out: Path | None = None) -> Path:
    """Write the PNG for `run_dirs` (run directories or eval logs) to `out` (default: the plots/ folder beside the
    first one's log) and return its path."""
    if not run_dirs:
        raise ValueError("plot_runs: no run directories given")
    names = _labels([Path(d) for d in run_dirs])
    runs = [load_run(Path(d), name) for d, name in zip(run_dirs, names)]
    if out is None:
        stem = "accuracy" if len(runs) == 1 else "accuracy_" + "_vs_".join(names).replace("/", "-")
        first = Path(run_dirs[0])
        out = (first if first.is_dir() else first.parent) / "plots" / f"{stem}.png"
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    build_figure(runs).savefig(out, dpi=120)
    return out


def build_figure(runs: list[RunCurves]):
    """A standalone matplotlib Figure (rendered by Agg, no pyplot state): accuracy against steps, against the
    sampler's episodes and against its cost."""
    import matplotlib
    from matplotlib.figure import Figure
    from matplotlib.lines import Line2D
    from matplotlib.ticker import EngFormatter, MaxNLocator

    families = sorted({f for r in runs for f in r.accuracy if f != OVERALL}, key=family_order)
    palette = matplotlib.colormaps["tab10"]
    colours = {f: palette(i % 10) for i, f in enumerate(families)} | {OVERALL: "black"}
    figure = Figure(figsize=(17, 5.2), layout="constrained")
    axes = figure.subplots(1, 3, sharey=True)
    for ax, (xlabel, attr) in zip(axes, (("optimizer steps", "steps"), ("episodes (the sampler's)", "episodes"),
                                         ("cost (the sampler's: generated tokens)", "cost"))):
        for i, run in enumerate(runs):
            x = getattr(run, attr)
            for family, ys in run.accuracy.items():
                points = [(a, b) for a, b in zip(x, ys) if a is not None and b is not None]
                if not points:
                    continue
                ax.plot(*zip(*points), linestyle=STYLES[i % len(STYLES)], color=colours[family], marker="o",
                        markersize=3, linewidth=2.2 if family == OVERALL else 1.4,
                        zorder=1.5 if family == OVERALL else 2, label=f"{run.name} · {family}")
        ax.set_xlabel(xlabel)
        if attr == "steps":
            ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        else:
            ax.xaxis.set_major_formatter(EngFormatter(sep=""))
        ax.grid(alpha=0.3)
        ax.set_ylim(-0.03, 1.03)
    axes[0].set_ylabel("greedy eval accuracy")
    figure.suptitle("Per-family eval accuracy" + (": " + " vs ".join(r.name for r in runs) if len(runs) > 1 else f": {runs[0].name}"))
    family_handles = [Line2D([], [], color=colours[f], linewidth=2, label=f"family {f}{tasks_note(runs, f)}") for f in families]
    family_handles.append(Line2D([], [], color="black", linewidth=2.2, label="all families"))
    if len(runs) > 1:
        run_handles = [Line2D([], [], color="grey", linestyle=STYLES[i % len(STYLES)], linewidth=2, label=r.name)
                       for i, r in enumerate(runs)]
        axes[-1].add_artist(axes[-1].legend(handles=run_handles, loc="lower left", bbox_to_anchor=(1.01, 0.0), title="line style"))
    axes[-1].legend(handles=family_handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), title="colour")
    return figure


def tasks_note(runs: list[RunCurves], family: str) -> str:
    """A legend note "(n=20)" when every run evaluated the family on the same number of tasks."""
    counts = {r.tasks.get(family) for r in runs}
    return f" (n={counts.pop()})" if len(counts) == 1 and None not in counts else ""


def eval_headline(evals: RunCurves) -> str | None:
    """One line on what the greedy eval says: the family whose accuracy on the eval split rose most from the first
    eval to the last, with its number of test tasks (each task moves the accuracy by 1/n, so the size is the noise
    scale), and how many families it was picked from. None before a second eval."""
    changes = [(ys[-1] - ys[0], f, ys[0], ys[-1]) for f, ys in evals.accuracy.items()
               if f != OVERALL and len(ys) > 1 and ys[0] is not None and ys[-1] is not None]
    if not changes:
        return None
    gain, family, first, last = max(changes, key=lambda c: c[0])
    n = evals.tasks.get(family)
    size = f", {n} tasks" if n else ""
    picked = f" (best of {len(changes)} families)" if len(changes) > 1 else ""
    return (f"{evals.split}-split eval, step {evals.steps[0]} -> {evals.steps[-1]}: family {family} "
            f"{first:.2f} -> {last:.2f} ({gain:+.2f}{size}){picked}")


def _labels(run_dirs: list[Path]) -> list[str]:
    """Run directory names (an eval log's folder), with the parent folder added where two runs share a name."""
    run_dirs = [d if d.is_dir() else d.parent for d in run_dirs]
    names = [d.resolve().name for d in run_dirs]
    return [f"{d.resolve().parent.name}/{n}" if names.count(n) > 1 else n for d, n in zip(run_dirs, names)]


def family_order(family: str):
    return (0, float(family), "") if _is_number(family) else (1, 0.0, family)


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True
