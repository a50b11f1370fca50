"""What moved in a run, in a few lines printed at its end: draw shares, estimated p, sampled reward, groups with
signal and eval accuracy, first quarter of the run against its last."""

from __future__ import annotations

from pathlib import Path

from openenv_prime.evaluation.curves import eval_curves, eval_headline
from openenv_prime.evaluation.runlog import read_log
from openenv_prime.mlx_trainer.report.sampler_panel import step_history


def summarize(run_dir: Path) -> str:
    """A few lines that say what moved in a run: draw shares, estimated p, sampled reward, groups
    with signal and eval accuracy, first quarter against last quarter of the run."""
    log = read_log(run_dir)
    steps = step_history(log)
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
    evals = eval_curves(log) if log.evals else None
    if evals is not None and len(evals.steps) > 1:
        parts = [f"{f} {ys[0]:.2f}->{ys[-1]:.2f}" for f, ys in evals.accuracy.items()
                 if ys and ys[0] is not None and ys[-1] is not None]
        lines.append(f"  greedy eval (step {evals.steps[0]} -> {evals.steps[-1]}): " + ", ".join(parts))
        headline = eval_headline(evals)
        if headline:
            lines.append(f"  {headline}")
    return "\n".join(lines)
