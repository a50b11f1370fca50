"""Learning-curve plots from eval logs: MLX run directories (their log.jsonl) and EvalHarness JSONL logs."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from openenv_prime.evaluation.curves import build_figure, load_run, plot_runs

FAMILIES = ("0", "1", "2", "3", "4")


def write_run(run_dir: Path, *, speed: float, evals: int = 6, episodes_per_step: int = 64, tokens_per_episode: int = 7) -> Path:
    """A run in the trainer's log format: step lines, and eval lines every 5 steps whose accuracy
    falls with the family (harder tiers) and rises with the step at `speed`."""
    run_dir.mkdir(parents=True)
    (run_dir / "config.toml").write_text("steps = 25\n")
    lines = []
    for step in range(0, 5 * (evals - 1) + 1):
        episodes, tokens = step * episodes_per_step, step * episodes_per_step * tokens_per_episode
        if step:
            lines.append({"type": "step", "step": step, "episodes": episodes, "tokens": tokens, "reward": 0.5,
                          "family_reward": {"0": 0.5}, "sampler": {}, "tokens_per_s": 100.0,
                          "seconds": {"generation": 1.0, "environment": 0.1, "training": 1.0, "other": 0.0}, "loss": 0.0})
        if step % 5 == 0:
            acc = {f: round(min(1.0, (1 - int(f) / 5) * (1 - math.exp(-speed * step)) + 0.05), 3) for f in FAMILIES}
            lines.append({"type": "eval", "step": step, "episodes": episodes, "tokens": tokens, "accuracy": acc,
                          "overall": round(sum(acc.values()) / len(acc), 3), "n": {f: 20 for f in FAMILIES}})
    (run_dir / "log.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    return run_dir


@pytest.fixture
def two_runs(tmp_path):
    return [write_run(tmp_path / "curriculum", speed=0.15), write_run(tmp_path / "uniform", speed=0.05, tokens_per_episode=9)]


def test_load_run_reads_eval_lines_in_step_order(two_runs):
    run = load_run(two_runs[0])
    assert run.name == "curriculum"
    assert run.steps == [0, 5, 10, 15, 20, 25]
    assert run.episodes == [s * 64 for s in run.steps] and run.cost == [s * 64 * 7 for s in run.steps]
    assert list(run.accuracy) == [*FAMILIES, "all"]
    assert run.accuracy["0"][0] == 0.05 and run.accuracy["0"][-1] > 0.9
    assert run.tasks == {f: 20 for f in FAMILIES}


def test_plot_writes_a_png_with_one_line_per_family_per_run_and_panel(two_runs, tmp_path):
    out = plot_runs(two_runs, tmp_path / "out" / "compare.png")
    assert out == tmp_path / "out" / "compare.png"
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    from matplotlib.image import imread

    height, width, _ = imread(out).shape
    assert width > 1000 and height > 500
    figure = build_figure([load_run(d) for d in two_runs])
    steps_ax, episodes_ax, tokens_ax = figure.axes[:3]
    assert steps_ax.get_xlabel() == "optimizer steps" and episodes_ax.get_xlabel().startswith("episodes")
    assert tokens_ax.get_xlabel().startswith("cost")
    for ax in (steps_ax, episodes_ax, tokens_ax):
        assert len(ax.lines) == 2 * (len(FAMILIES) + 1)
        assert {line.get_linestyle() for line in ax.lines} == {"-", "--"}
    uniform_tier0 = next(line for line in tokens_ax.lines if line.get_label() == "uniform · 0")
    assert list(uniform_tier0.get_xdata()) == [s * 64 * 9 for s in (0, 5, 10, 15, 20, 25)]
    assert list(uniform_tier0.get_ydata()) == load_run(two_runs[1]).accuracy["0"]
    legend_texts = {t.get_text() for legend in tokens_ax.findobj(lambda a: type(a).__name__ == "Legend") for t in legend.get_texts()}
    assert {"curriculum", "uniform", "family 0 (n=20)", "family 4 (n=20)"} <= legend_texts


def test_default_output_goes_to_the_run_plots_folder(two_runs):
    assert plot_runs(two_runs[:1]) == two_runs[0] / "plots" / "accuracy.png"
    assert plot_runs(two_runs) == two_runs[0] / "plots" / "accuracy_curriculum_vs_uniform.png"
    assert (two_runs[0] / "plots" / "accuracy_curriculum_vs_uniform.png").stat().st_size > 10_000


def test_same_run_names_are_told_apart_by_parent(tmp_path):
    a, b = write_run(tmp_path / "a" / "run", speed=0.1), write_run(tmp_path / "b" / "run", speed=0.2)
    figure = build_figure([load_run(a, "a/run"), load_run(b, "b/run")])
    assert {"a/run · 0", "b/run · 0"} <= {line.get_label() for line in figure.axes[0].lines}
    assert plot_runs([a, b]).name == "accuracy_a-run_vs_b-run.png"


def test_a_run_without_evals_is_a_clear_error(tmp_path):
    run = tmp_path / "empty"
    run.mkdir()
    (run / "log.jsonl").write_text(json.dumps({"type": "step", "step": 1}) + "\n")
    with pytest.raises(ValueError, match="no eval lines"):
        plot_runs([run])
    assert not (run / "plots").exists()


def test_a_torn_last_line_is_ignored_but_a_damaged_middle_line_is_an_error(two_runs):
    log = two_runs[0] / "log.jsonl"
    log.write_text(log.read_text() + '{"type": "eval", "step": 30, "epis')
    assert load_run(two_runs[0]).steps[-1] == 25
    lines = log.read_text().splitlines()
    log.write_text("\n".join([lines[0], "{oops", *lines[1:]]) + "\n")
    with pytest.raises(ValueError, match=r"log.jsonl:2: not a JSON line"):
        load_run(two_runs[0])


@settings(max_examples=30, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 50), st.floats(0, 1)), min_size=1, max_size=20))
def test_curves_are_sorted_by_step_and_a_repeated_step_keeps_the_last_eval(tmp_path_factory, evals):
    run = tmp_path_factory.mktemp("run")
    lines = [{"type": "eval", "step": s, "episodes": 10 * s, "tokens": 100 * s, "accuracy": {"7": a}, "overall": a, "n": {"7": 1}}
             for s, a in evals]
    (run / "log.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    curves = load_run(run)
    last = {s: a for s, a in evals}
    assert curves.steps == sorted(last)
    assert curves.accuracy["7"] == [last[s] for s in curves.steps]
    assert curves.episodes == [10 * s for s in curves.steps]


def test_an_eval_harness_log_plots_against_steps_episodes_and_cost(tmp_path):
    """The JSONL an EvalHarness writes (a TRL run's, a plain loop's): the sampler's episodes and cost per record."""
    records = [{"type": "eval", "step": s, "split": "heldout", "accuracy": {"a": s / 10, "b": 0.5}, "n": {"a": 8, "b": 8},
                "overall": (s / 10 + 0.5) / 2, "episodes": 32.0 * s, "cost": 200.0 * s} for s in (0, 4, 8)]
    log = tmp_path / "run" / "evals.jsonl"
    log.parent.mkdir()
    log.write_text("".join(json.dumps(r) + "\n" for r in records))
    run = load_run(log)
    assert run.name == "run" and run.split == "heldout" and run.steps == [0, 4, 8]
    assert run.episodes == [0, 128, 256] and run.cost == [0, 800, 1600]
    assert load_run(log.parent).steps == run.steps  # the folder finds its evals.jsonl
    figure = build_figure([run])
    cost_line = next(line for line in figure.axes[2].lines if line.get_label() == "run · a")
    assert list(cost_line.get_xdata()) == [0, 800, 1600] and list(cost_line.get_ydata()) == [0.0, 0.4, 0.8]
    assert plot_runs([log]) == log.parent / "plots" / "accuracy.png"
