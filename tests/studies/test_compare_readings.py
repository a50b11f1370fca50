"""studies/mlx_runs/compare.py's two readings of RFC 013 (per episode, per generated token) on synthetic run logs."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from studies.mlx_runs.compare import (
    episode_mean,
    interpolate,
    paired,
    plot_tokens,
    readings,
    sign_test,
    token_curve,
    window_mean,
)
from studies.run_dirs import load_runs

FAMILIES = ("a/0", "b/0")


def evals(points: list[tuple[int, float, float]]) -> list[dict]:
    """Eval records as a run's log.jsonl holds them: (step, cumulative generated tokens, accuracy of every family)."""
    return [{"type": "eval", "step": step, "tokens": tokens, "cost": tokens, "episodes": 32 * step,
             "accuracy": {f: acc for f in FAMILIES}, "n": {f: 25 for f in FAMILIES}} for step, tokens, acc in points]


def run(points: list[tuple[int, float, float]], finished: bool = True) -> dict:
    return {"evals": evals(points), "steps": [], "finished": finished, "bench": []}


def test_a_linear_curve_reads_its_midpoint_over_any_window_and_a_step_curve_its_known_mean():
    line = [(0.0, 0.0), (1000.0, 0.5), (2000.0, 1.0)]  # accuracy = tokens / 2000
    assert math.isclose(window_mean(line, 500, 1500), 0.5)
    assert math.isclose(window_mean(line, 1000, 2000), 0.75)
    assert math.isclose(window_mean(line, 0, 400, points=5), 0.1)
    # flat at 0.2 up to 1000 tokens, then 0.6 from 1100 on: the 11 points 1000, 1010, .. 1100 read 0.2 .. 0.6 linearly
    steps = [(0.0, 0.2), (1000.0, 0.2), (1100.0, 0.6), (3000.0, 0.6)]
    assert math.isclose(window_mean(steps, 1000, 1100, points=11), 0.4)
    assert math.isclose(window_mean(steps, 1100, 3000), 0.6) and math.isclose(window_mean(steps, 0, 1000), 0.2)
    assert math.isclose(interpolate(steps, 1025.0), 0.3)


def test_a_window_outside_the_curve_is_refused_not_extrapolated():
    line = [(0.0, 0.0), (1000.0, 0.5)]
    with pytest.raises(ValueError, match="outside"):
        window_mean(line, 500, 1200)
    with pytest.raises(ValueError):
        window_mean(line, 600, 500)


def test_the_per_episode_reading_is_the_mean_of_the_evals_in_its_window_of_steps():
    records = evals([(0, 0, 0.1), (4, 900, 0.2), (8, 1800, 0.4), (12, 2700, 0.5), (16, 3600, 0.9)])
    assert math.isclose(episode_mean(records, 8, 16), (0.4 + 0.5 + 0.9) / 3)
    assert math.isclose(episode_mean(records, 5, 11), 0.4)
    with pytest.raises(ValueError):
        episode_mean(records, 13, 15)


def test_runs_that_generate_different_token_counts_are_read_at_the_same_tokens_by_interpolation_not_truncation():
    """Two runs on the same accuracy-per-token line, one generating twice the tokens per step: per token they read
    the same; per episode the thrifty one is behind. A third run, cut short, sets the window's end T; the long run
    is read inside T by interpolation between its evals, not cut to its first evals."""
    thrifty = run([(s, 100.0 * s, 0.001 * 100 * s) for s in range(0, 21, 4)])  # 2000 tokens at step 20
    costly = run([(s, 200.0 * s, 0.001 * 200 * s) for s in range(0, 21, 4)])  # 4000 tokens, same line
    read = readings({"default": {0: thrifty}, "uniform": {0: costly}}, share=0.5)
    assert read["episode"] == (10, 20) and read["tokens"] == (1000.0, 2000.0)
    # per token both are the line accuracy = tokens / 1000 read from 1000 to 2000 tokens: mean 1.5 (no cap on a made-up
    # accuracy); the costly run's evals at 1600 and 2400 tokens are interpolated to read 2000 exactly
    assert math.isclose(read["per_token"]["default"][0], 1.5) and math.isclose(read["per_token"]["uniform"][0], 1.5)
    # per episode the evals at steps 12, 16, 20: 0.1 x (12, 16, 20) against 0.2 x (12, 16, 20)
    assert math.isclose(read["per_episode"]["default"][0], 1.6) and math.isclose(read["per_episode"]["uniform"][0], 3.2)


def test_the_token_window_is_read_between_evals_at_odd_token_counts():
    """Evals at token counts that do not fall on the window's points: the reading is the interpolated one, which
    differs from the mean of the evals that happen to lie in the window."""
    curve = run([(0, 0, 0.0), (4, 700, 0.7), (8, 1900, 0.7), (12, 2100, 0.1)])
    other = run([(0, 0, 0.0), (4, 1000, 0.0), (8, 2000, 0.0)])
    read = readings({"x": {0: curve}, "y": {0: other}}, share=0.5)
    assert read["tokens"] == (1000.0, 2000.0)
    expected = sum(interpolate(token_curve(curve["evals"]), 1000 + 125 * i) for i in range(9)) / 9
    assert math.isclose(read["per_token"]["x"][0], expected) and math.isclose(expected, (8 * 0.7 + 0.4) / 9)
    assert not math.isclose(expected, 0.7)  # the mean of the evals inside 1000..2000 tokens (one, 0.7) differs


def test_unfinished_runs_are_not_read():
    done = run([(0, 0, 0.0), (8, 1000, 0.5)])
    short = run([(0, 0, 0.0), (4, 100, 0.9)], finished=False)  # would set T = 100 if it counted
    read = readings({"d": {0: done, 1: short}, "u": {0: done}}, share=0.5)
    assert read["tokens"] == (500.0, 1000.0) and set(read["per_token"]["d"]) == {0}


def test_the_paired_sign_test_on_a_known_split():
    a = {seed: 0.5 for seed in range(8)}
    b = {0: 0.4, 1: 0.4, 2: 0.4, 3: 0.4, 4: 0.4, 5: 0.4, 6: 0.5, 7: 0.6}  # a ahead on 6, tied on 1, behind on 1
    t = paired(a, b)
    assert (t["ahead"], t["tied"], t["behind"]) == (6, 1, 1)
    assert math.isclose(t["p"], 2 * (1 + 7) / 2**7)  # the two-sided binomial p of 6 of 7: 0.125
    assert math.isclose(t["median"], 0.1)
    assert math.isclose(paired({s: 1.0 for s in range(8)}, {s: 0.0 for s in range(8)})["p"], 2 / 2**8)
    assert sign_test(4, 4) == 1.0


def test_the_report_reads_real_log_files_and_draws_the_token_plot(tmp_path: Path):
    """Synthetic log.jsonl files in compare's layout (OUT/seedN/SAMPLER/), a shared step-0 eval in the first run only:
    load_runs adds it to every run, the readings come out per seed, and the token plot is drawn."""
    def write(sampler: str, seed: int, per_step: float, slope: float, with_zero: bool) -> None:
        folder = tmp_path / f"seed{seed}" / sampler
        folder.mkdir(parents=True)
        lines = [{"type": "step", "step": s, "reward": 0.0, "groups": 4, "groups_with_signal": 1, "episodes": 32 * s,
                  "seconds": {"generation": 1.0}, "sampler": {}} for s in range(1, 9)]
        points = [(s, per_step * s, 0.1 + slope * s) for s in (0, 4, 8) if s or with_zero]
        (folder / "log.jsonl").write_text("\n".join(json.dumps(x) for x in lines + evals(points)) + "\n")
        last = folder / "checkpoints" / "step_000008"
        last.mkdir(parents=True)
        (last / "state.json").write_text(json.dumps({"step": 8, "finished": True}))

    for seed in range(3):
        write("curriculum", seed, 150.0, 0.05, with_zero=seed == 0)
        write("uniform", seed, 250.0, 0.02 + 0.001 * seed, with_zero=False)
    runs = load_runs(tmp_path, ["curriculum", "uniform"])
    assert {s: sorted(by) for s, by in runs.items()} == {"curriculum": [0, 1, 2], "uniform": [0, 1, 2]}
    assert all(r["finished"] for by in runs.values() for r in by.values())
    read = readings(runs, share=0.5)
    assert read["episode"] == (4, 8) and read["tokens"] == (600.0, 1200.0)  # T: curriculum's 8 x 150 tokens
    # curriculum: 0.1 + 0.05 x step at 150 tokens a step, read at 600..1200 tokens: steps 4..8, mean 0.1 + 0.05 x 6
    assert all(math.isclose(v, 0.4) for v in read["per_token"]["curriculum"].values())
    # uniform at 250 tokens a step: 600..1200 tokens are steps 2.4..4.8, mean step 3.6 (its step-0 eval is the shared one)
    assert all(math.isclose(read["per_token"]["uniform"][s], 0.1 + (0.02 + 0.001 * s) * 3.6) for s in range(3))
    assert paired(read["per_token"]["curriculum"], read["per_token"]["uniform"])["ahead"] == 3
    png = plot_tokens(runs, tmp_path / "compare-tokens.png", read["tokens"])
    assert png.stat().st_size > 5_000
