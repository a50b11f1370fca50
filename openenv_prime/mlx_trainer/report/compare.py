"""Runs of several samplers over several seeds on one PNG (benchmarks/mlx_trainer/compare.py draws it)."""

from __future__ import annotations

from pathlib import Path

from openenv_prime.evaluation.curves import OVERALL, STYLES, eval_curves
from openenv_prime.evaluation.runlog import read_log
from openenv_prime.mlx_trainer.report.sampler_panel import step_history


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
        log = read_log(run)
        steps = step_history(log)
        style = STYLES[seeds.index(run.parent.name) % len(STYLES)]
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
        if log.evals:
            evals = eval_curves(log)
            eval_ax.plot(evals.steps, evals.accuracy[OVERALL], color=colour, linestyle=style, marker="o",
                         markersize=3, linewidth=1.6, label=label)
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
