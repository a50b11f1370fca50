"""What the sampler did, from a run's step lines: where it put its draws per family over time, each family's
estimated p, sampled reward and groups with signal per step, beside the eval curves."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from openenv_prime.evaluation.curves import OVERALL, RunCurves, eval_headline, family_order, tasks_note
from openenv_prime.evaluation.runlog import RunLog, read_log


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
    """The step history of RUN_DIR/log.jsonl (see `step_history`)."""
    return step_history(read_log(run_dir), name)


def step_history(log: RunLog, name: str | None = None) -> RunSteps:
    """The step history of a run's log; a ValueError before its first step. Draws per family come from the
    sampler's cumulative per-key episode counts (differences between steps), or from the step's per-family
    rewards; the estimated p is the sampler's own (``key/<family>/p``) or, for samplers without one, the
    running mean of the family's sampled reward."""
    records = log.steps
    if not records:
        raise ValueError(f"{log.run_dir / 'log.jsonl'}: no step lines yet")
    out = RunSteps(name or log.run_dir.resolve().name)
    families = sorted({k[len("key/"):].rpartition("/")[0] for r in records.values() for k in r.get("sampler", {})
                       if k.startswith("key/")}
                      | {f for r in records.values() for f in r.get("family_reward", {})}, key=family_order)
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
                             linewidth=2.2 if f == OVERALL else 1.4,
                             label=("all families" if f == OVERALL else f"family {f}") + tasks_note([evals], f))
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
