"""studies/mlx_runs/compare.py end to end on the tiny model: each sampler trains in its own run directory, resumably,
and the report prints its tables; runs at another learning rate keep apart; the sign test it reports."""

from __future__ import annotations

import pathlib
import sys

import pytest

from tests.support.waiting import HANG_GUARD_S

ROOT = pathlib.Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_the_comparison_runs_each_sampler_resumably_and_reports(tmp_path):
    """studies.mlx_runs.compare on the tiny model (1 seed x 2 steps, reasoning-gym server with a heldout split): each
    sampler trains in its own run directory, the peer's state is the peer's, a second call trains nothing again,
    the untrained model is evaluated once, and the report prints the tables and draws the overlaid plot."""
    import json
    import subprocess

    command = [sys.executable, "-m", "studies.mlx_runs.compare", "--model", "tiny", "--seeds", "0", "--steps", "2",
               "--datasets", "products", "--train-size", "8", "--heldout-size", "3", "--eval-every", "0",
               "--group-size", "2", "--out", str(tmp_path / "cmp")]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=HANG_GUARD_S)
    assert done.returncode == 0, done.stderr[-3000:]
    for sampler in ("curriculum", "uniform", "greso"):
        run = tmp_path / "cmp" / "seed0" / sampler
        state = json.loads((run / "checkpoints" / "step_000002" / "state.json").read_text())
        assert state["finished"] and state["step"] == 2
        assert (state["sampler"]["sampler"] == "PeerSampler") == (sampler == "greso")
        evals = [json.loads(line) for line in (run / "log.jsonl").read_text().splitlines() if '"eval"' in line]
        # The untrained model's step-0 eval is made once per comparison (greedy: the same in every run), by its first run.
        assert [e["step"] for e in evals] == ([0, 2] if sampler == "curriculum" else [2])
        assert set(evals[0]["n"].values()) == {3}  # every held-out question
    assert state["sampler"]["config"]["peer"] == "greso" and "p_hard" in state["sampler"]["peer"]
    assert "| greso | 0 |" in done.stdout and "Per-seed wins of curriculum" in done.stdout
    assert (tmp_path / "cmp" / "compare.png").stat().st_size > 10_000
    tables, table = [], []
    for line in done.stdout.splitlines() + [""]:  # consecutive lines that start with "|" make one markdown table
        if line.startswith("|"):
            table.append(line)
        elif table:
            tables, table = tables + [table], []
    assert len(tables) == 5  # per run, per family, medians; then the readings per episode and per generated token
    assert "curriculum vs uniform, per generated token: ahead / tied / behind" in done.stdout
    assert (tmp_path / "cmp" / "compare-tokens.png").stat().st_size > 5_000
    for table in tables:  # every row, the separator included, has as many cells as the header
        assert {line.count("|") for line in table} == {table[0].count("|")}, table[:2]
    again = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=HANG_GUARD_S)
    assert again.returncode == 0 and "training (" not in again.stdout and "| uniform | 0 |" in again.stdout


def test_the_comparisons_sign_test_is_the_binomial_two_sided_p():
    from studies.mlx_runs.compare import sign_test

    assert sign_test(7, 0) == sign_test(0, 7) == 2 / 2**7  # the 7-of-7 split docs/mlx.md reports as p = 0.016
    assert sign_test(9, 1) == 2 * (1 + 10) / 2**10
    assert sign_test(5, 5) == sign_test(0, 0) == 1.0
    assert all(sign_test(a, 10 - a) <= sign_test(a + 1, 9 - a) for a in range(5))  # more even splits, larger p


@pytest.mark.slow
def test_a_comparison_at_another_learning_rate_keeps_its_runs_apart_and_reports_them_by_name(tmp_path):
    """--learning-rate trains into seedN/SAMPLER-lrLR with that rate in the run's config; --report-only takes the name,
    and training under such a name is refused (the rate is set only by the flag)."""
    import json
    import subprocess

    out = tmp_path / "cmp"
    base = [sys.executable, "-m", "studies.mlx_runs.compare", "--model", "tiny", "--seeds", "0", "--steps", "1",
            "--datasets", "products", "--train-size", "8", "--heldout-size", "3", "--eval-every", "0",
            "--group-size", "2", "--out", str(out), "--samplers", "uniform"]
    done = subprocess.run(base + ["--learning-rate", "0.0005"], cwd=ROOT, capture_output=True, text=True,
                          timeout=HANG_GUARD_S)
    assert done.returncode == 0, done.stderr[-3000:]
    spec = json.loads((out / "seed0" / "uniform-lr0.0005.json").read_text())
    assert spec["config"]["grpo"]["learning_rate"] == 0.0005 and not (out / "seed0" / "uniform").exists()
    assert "| uniform-lr0.0005 | 0 |" in done.stdout
    report = subprocess.run(base[:-2] + ["--report-only", "--samplers", "uniform-lr0.0005"], cwd=ROOT,
                            capture_output=True, text=True, timeout=HANG_GUARD_S)
    assert report.returncode == 0 and "| uniform-lr0.0005 | 0 |" in report.stdout, report.stderr[-2000:]
    refused = subprocess.run(base[:-2] + ["--samplers", "uniform-lr0.0005"], cwd=ROOT, capture_output=True, text=True,
                             timeout=HANG_GUARD_S)
    assert refused.returncode == 2 and "set the learning rate with --learning-rate" in refused.stderr
