"""`train(config)`: the GRPO training run, top to bottom.

Plan the run in its directory (every check that needs no model), start the environment, build the run's parts
(`setup`), restore the latest checkpoint when resuming, then evaluate, step and checkpoint until the last step
(`evals`, `steps`), in the order mlx-lm's ``tuner.trainer.train`` keeps: an eval before the first step and after
every due one, a checkpoint every ``checkpoint.every`` steps and at the end. MLX runs on the main thread and the
environment's sockets on an event loop beside it (`worker`). Ctrl-C saves a checkpoint of the last completed step;
an environment failure does too and says how to continue. The trackers of ``report_to`` follow the run's log
(`report.trackers`).
"""

from __future__ import annotations

import asyncio
import sys
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator

from openenv_prime.mlx_trainer.config import TrainConfig
from openenv_prime.mlx_trainer.errors import TrainingError, TrainingInterrupted
from openenv_prime.mlx_trainer.report.trackers import TrackerUnavailable, open_trackers, require_trackers
from openenv_prime.mlx_trainer.training.checkpoint import TrainerState, load_checkpoint
from openenv_prime.mlx_trainer.training.evals import evaluate_if_due
from openenv_prime.mlx_trainer.training.rundir import LOG, RunStart, append_log, claim, plan_run, truncate_log
from openenv_prime.mlx_trainer.training.setup import TrainerParts, build_parts, environment_url
from openenv_prime.mlx_trainer.training.steps import TrainingSteps
from openenv_prime.mlx_trainer.worker import MainThreadMLX

__all__ = ["RunResult", "TrainingError", "TrainingInterrupted", "train"]


@dataclass
class RunResult:
    run_dir: Path
    state: TrainerState
    already_finished: bool = False


def train(config: TrainConfig, run_dir: Path | None = None, *, resume: bool = False, allow_config_change: bool = False,
          sampler_wrapper: Callable[[Any], Any] | None = None, progress: bool = True) -> RunResult:
    """Run (or with ``resume`` continue) the training described by ``config``; blocks until done.

    Everything that can be checked (config, run directory, config changes and sampler settings on resume) is checked
    before the model loads. ``sampler_wrapper(sampler) -> sampler`` lets callers observe or wrap the sampler (tests
    record updates). Ctrl-C raises :class:`TrainingInterrupted` after a checkpoint of the last completed step.
    """
    run_dir = Path(run_dir if run_dir is not None else config.out)
    start = plan_run(run_dir, config, resume=resume, allow_config_change=allow_config_change)
    try:
        require_trackers(config.report_to)
    except TrackerUnavailable as err:
        raise TrainingError(str(err)) from None
    for note in start.notes:
        print(f"note: {note}", file=sys.stderr)
    mlx = MainThreadMLX()
    with environment_url(config.environment) as base_url:
        return mlx.drive(_run(config, run_dir, start, base_url, mlx, sampler_wrapper, progress))


async def _run(config: TrainConfig, run_dir: Path, start: RunStart, base_url: str, mlx: MainThreadMLX,
               sampler_wrapper: Callable[[Any], Any] | None, progress: bool) -> RunResult:
    try:
        parts = await build_parts(config, base_url, mlx, start.sampler_kwargs, sampler_wrapper)
        state = await _restore(parts, start.resume_from, run_dir)
    except asyncio.CancelledError:
        raise TrainingInterrupted(
            f"interrupted ({mlx.interrupted}) before training started; nothing new was written to {run_dir}"
        ) from None
    if state.step >= config.steps:
        return RunResult(run_dir, state, already_finished=True)
    claim(run_dir, config, start)
    if start.config_changes:
        append_log(run_dir, {"type": "config_change", "step": state.step, "changes": start.config_changes})

    steps = TrainingSteps(config, run_dir, parts, state)
    trackers = None
    interrupted = False
    try:
        trackers = open_trackers(config.report_to, run_dir, run_dir / LOG, config.model_dump())  # replays the log
        with _progress(progress, config.steps, state.step) as bar:
            await steps.guarded(evaluate_if_due(config, parts, state, run_dir))
            trackers.sync()
            while state.step < config.steps:
                bar(await steps.guarded(steps.step()))
                await steps.guarded(evaluate_if_due(config, parts, state, run_dir))
                trackers.sync()
                if state.step % config.checkpoint.every == 0 and state.step < config.steps:
                    await steps.checkpoint()
    except asyncio.CancelledError:
        interrupted = True
    finally:
        await steps.drop_prefetch()
        await parts.runner.close()
        if trackers is not None:
            trackers.close()
    if interrupted:
        path = await steps.checkpoint()
        raise TrainingInterrupted(
            f"interrupted ({mlx.interrupted}) during step {state.step + 1}; saved a checkpoint of the last "
            f"completed step, {state.step}, in {path}. Continue with `openenv-prime train --resume --out {run_dir}`"
        )
    state.finished = True
    await steps.checkpoint()
    if config.plot:
        from openenv_prime.mlx_trainer.report.run_plots import plot_run

        plot_run(run_dir)
    return RunResult(run_dir, state)


async def _restore(parts: TrainerParts, checkpoint: Path | None, run_dir: Path) -> TrainerState:
    """A fresh state, or the checkpoint's, loaded into the model, the optimizer and the sampler (log lines of steps
    after it dropped)."""
    if checkpoint is None:
        return TrainerState()
    state = await parts.mlx.run(load_checkpoint, checkpoint, parts.model, parts.optimizer)
    parts.sampler.load_state_dict(state.sampler)
    truncate_log(run_dir, state.step)
    return state


@contextmanager
def _progress(enabled: bool, total: int, done: int) -> Iterator[Callable[[dict[str, Any]], None]]:
    """A rich progress bar; yields ``update(step_record)``."""
    if not enabled:
        yield lambda record: None
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    with Progress(TextColumn("train"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  TextColumn("{task.description}")) as progress:
        task = progress.add_task("", total=total, completed=done)

        def update(record: dict[str, Any]) -> None:
            progress.update(task, completed=record["step"],
                            description=f"reward {record['reward']:.2f}  loss {record['loss']:+.3f}  "
                                        f"{record['tokens_per_s']:.0f} tok/s")

        yield update
