"""studies/mlx_runs/signal_quality.py: held-out accuracy at equal groups with signal, per sampler."""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from studies.mlx_runs.signal_quality import Point, points, residuals, table

ROOT = Path(__file__).resolve().parents[2]
FAMILIES = ["products/0", "chain_sum/0"]


def run(signal: dict[str, int], flat: int, accuracy: dict[str, float], finished: bool = True) -> dict:
    """A run as run_dirs.load_runs gives it: per family `signal[f]` groups whose rewards differ, `flat` all-wrong ones."""
    groups = [{"key": f, "index": i, "rewards": [1.0, 0.0, 0.0, 1.0]} for f, n in signal.items() for i in range(n)]
    groups += [{"key": f, "index": 99, "rewards": [0.0, 0.0, 0.0, 0.0]} for f in signal for _ in range(flat)]
    # a group whose rewards differ by less than the tolerance gives GRPO nothing: not counted
    groups.append({"key": FAMILIES[0], "index": 98, "rewards": [0.5, 0.5 + 1e-9]})
    return {"steps": [{"group_rewards": groups[:3]}, {"group_rewards": groups[3:]}],
            "evals": [{"accuracy": {f: 0.0 for f in accuracy}}, {"accuracy": accuracy}], "finished": finished}


def test_points_count_each_familys_groups_with_signal_and_take_the_last_eval_of_finished_runs():
    runs = {"a": {0: run({"products/0": 5, "chain_sum/0": 2}, 3, {"products/0": 0.5, "chain_sum/0": 0.25}),
                  1: run({"products/0": 9, "chain_sum/0": 9}, 0, {"products/0": 0.9, "chain_sum/0": 0.9}, finished=False)}}
    assert sorted(points(runs, FAMILIES)) == sorted([Point("a", 0, "products/0", 5, 0.5),
                                                     Point("a", 0, "chain_sum/0", 2, 0.25)])


def test_a_sampler_that_answers_more_at_the_same_signal_has_the_higher_residual_by_the_gap():
    """Two samplers with the same signal counts, one 0.1 more accurate on every run: the line runs between them, so
    their mean residuals are -0.05 and +0.05, whatever the counts."""
    counts = [(3, 1), (8, 4), (15, 9), (30, 20)]
    base = [(0.3, 0.2), (0.5, 0.3), (0.6, 0.5), (0.7, 0.55)]
    runs = {name: {seed: run({"products/0": p, "chain_sum/0": c}, 1, {"products/0": a + shift, "chain_sum/0": b + shift})
                   for seed, ((p, c), (a, b)) in enumerate(zip(counts, base))}
            for name, shift in (("worse", 0.0), ("better", 0.1))}
    _, fitted = residuals(points(runs, FAMILIES))
    mean = {name: sum(r for p, r in fitted if p.sampler == name) / 8 for name in runs}
    assert math.isclose(mean["worse"], -0.05, abs_tol=1e-9) and math.isclose(mean["better"], 0.05, abs_tol=1e-9)
    text = table(points(runs, FAMILIES))
    assert "| worse | 4 |" in text and "-0.050 ±" in text and "| better | 4 |" in text and "+0.050 ±" in text
    rows = [line for line in text.splitlines() if line.startswith("|")]
    assert len(rows) == 4 and {line.count("|") for line in rows} == {6}


def test_more_signal_that_the_line_explains_is_no_residual():
    """A sampler that is ahead only because it had more groups with signal (every point on one line) scores 0."""
    runs = {name: {seed: run({"products/0": n, "chain_sum/0": n}, 0,
                             {f: 0.2 + 0.1 * math.log1p(n) for f in FAMILIES})
                   for seed, n in enumerate(counts)}
            for name, counts in (("few", [1, 2, 3]), ("many", [10, 20, 40]))}
    _, fitted = residuals(points(runs, FAMILIES))
    assert all(abs(r) < 1e-9 for _, r in fitted)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 50), st.floats(0, 1)), min_size=2, max_size=12), st.floats(-0.5, 0.5))
def test_residuals_sum_to_zero_per_family_and_ignore_a_shift_of_every_accuracy(pairs, shift):
    pts = [Point("s", i, "products/0", n, a) for i, (n, a) in enumerate(pairs)]
    _, fitted = residuals(pts)
    assert abs(sum(r for _, r in fitted)) < 1e-6
    _, moved = residuals([p._replace(accuracy=p.accuracy + shift) for p in pts])
    assert all(abs(r - s) < 1e-6 for (_, r), (_, s) in zip(fitted, moved))


def test_a_folder_without_finished_runs_is_refused_with_what_to_name(tmp_path):
    done = subprocess.run([sys.executable, "-m", "studies.mlx_runs.signal_quality", "--out", str(tmp_path),
                           "--samplers", "curriculum"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and "no finished run of curriculum" in done.stderr and "--report-only" in done.stderr
