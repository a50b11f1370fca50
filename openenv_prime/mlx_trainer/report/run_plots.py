"""The PNGs a finished run writes into RUN_DIR/plots/, from one read of its log: ``accuracy.png`` (per-family eval
accuracy, when the run evaluated) and ``curriculum.png`` (what the sampler did)."""

from __future__ import annotations

from pathlib import Path

from openenv_prime.evaluation.curves import build_figure, eval_curves
from openenv_prime.evaluation.runlog import read_log
from openenv_prime.mlx_trainer.report.sampler_panel import build_sampler_figure, step_history


def plot_run(run_dir: Path) -> list[Path]:
    """Write the run's plots; returns their paths."""
    log = read_log(run_dir)
    folder = Path(run_dir) / "plots"
    folder.mkdir(parents=True, exist_ok=True)
    evals = eval_curves(log) if log.evals else None
    written = []
    if evals is not None:
        build_figure([evals]).savefig(folder / "accuracy.png", dpi=120)
        written.append(folder / "accuracy.png")
    build_sampler_figure(step_history(log), evals).savefig(folder / "curriculum.png", dpi=110)
    return written + [folder / "curriculum.png"]
