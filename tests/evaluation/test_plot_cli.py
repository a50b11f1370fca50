"""`openenv-prime plot` end to end through the real argument parser."""

from __future__ import annotations

from openenv_prime.cli import main
from test_plot import two_runs, write_run  # noqa: F401  (fixture and helper shared with the plot tests)


def test_cli_plot_writes_the_file(two_runs, tmp_path, capsys):
    out = tmp_path / "cli.png"
    assert main(["plot", str(two_runs[0]), str(two_runs[1]), "--out", str(out)]) == 0
    assert out.is_file() and str(out) in capsys.readouterr().out


def test_cli_plot_reports_a_missing_run_and_writes_nothing(tmp_path, capsys):
    out = tmp_path / "x.png"
    assert main(["plot", str(tmp_path / "nope"), "--out", str(out)]) != 0
    assert "no log.jsonl or evals.jsonl" in capsys.readouterr().err and not out.exists()
