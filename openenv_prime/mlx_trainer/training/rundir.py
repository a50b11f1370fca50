"""The run directory: whose it is, how a run starts or resumes in it, and its log file.

The trainer writes only into a directory it creates, an empty one, or one that holds its own run (marked by
``run.json``), so it never overwrites a user's files. A run of its own that stopped before its first
checkpoint starts again from step 0 (its partial log is removed). Resuming compares the config with the
run's own ``config.toml`` and refuses changes unless they are allowed explicitly, and takes the sampler settings the
config leaves at their defaults from the checkpoint (``resume.py``).
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from openenv_prime.evaluation.episodes import EPISODES_FILE
from openenv_prime.mlx_trainer.config import ConfigError, TrainConfig, dump_toml, load_config, sampler_kwargs
from openenv_prime.mlx_trainer.errors import TrainingError
from openenv_prime.mlx_trainer.report.trackers import TENSORBOARD_DIR, WANDB_DIR
from openenv_prime.mlx_trainer.training.checkpoint import latest_checkpoint, read_state
from openenv_prime.mlx_trainer.training.resume import resumed_sampler_kwargs

MARKER = "run.json"
LOG = "log.jsonl"
CONFIG = "config.toml"
# Files and folders the trainer writes; a run that never reached a checkpoint has only these to clear.
OWN_ENTRIES = (MARKER, LOG, CONFIG, EPISODES_FILE, "plots", "checkpoints", TENSORBOARD_DIR, WANDB_DIR)
# Keys that may differ on --resume without --allow-config-change: where things are and go, not what is trained.
FREE_TO_CHANGE = ("out", "steps", "plot", "report_to", "environment.base_url", "environment.timeout")


@dataclass
class RunStart:
    """How a run begins in its directory; ``notes`` are printed for the user."""

    resume_from: Path | None
    sampler_kwargs: dict[str, Any]
    config_changes: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def is_own_run(run_dir: Path) -> bool:
    """Marked by the trainer, or a run of a release before the marker (a checkpoint, or a log next to a trainer config)."""
    if (run_dir / MARKER).is_file() or latest_checkpoint(run_dir) is not None:
        return True
    if not (run_dir / LOG).is_file():
        return False
    try:
        load_config(run_dir / CONFIG)
    except ConfigError:
        return False
    return True


def plan_run(run_dir: Path, config: TrainConfig, *, resume: bool, allow_config_change: bool = False) -> RunStart:
    """Decide how the run starts, before anything is loaded or written; raise when the directory is not usable."""
    if run_dir.exists() and not run_dir.is_dir():
        raise TrainingError(f"--out {run_dir} is a file; pass a directory for the run")
    empty = not run_dir.exists() or not any(run_dir.iterdir())
    if not empty and not is_own_run(run_dir):
        raise TrainingError(
            f"--out {run_dir} is not empty and holds no openenv-prime run (no {MARKER}); the trainer writes only "
            "into a new or empty directory or one of its own runs: pass --out NEW_DIR"
        )
    checkpoint = latest_checkpoint(run_dir)
    if checkpoint is None:
        notes = []
        if not empty:
            notes.append(f"{run_dir} holds a run that stopped before its first checkpoint; starting it again from step 0")
        elif resume:
            notes.append(f"--resume: {run_dir} has no run yet; starting one from step 0")
        return RunStart(None, sampler_kwargs(config), notes=notes)
    if not resume:
        raise TrainingError(f"{run_dir} already holds a run; pass --resume to continue it, or --out NEW_DIR to start another")
    changes = config_changes(run_dir, config)
    if changes and not allow_config_change:
        listed = "\n".join(f"  {c}" for c in changes)
        raise TrainingError(
            f"--resume: the config differs from the one {run_dir} was trained with ({run_dir / CONFIG}):\n{listed}\n"
            "resume with the run's own config (omit CONFIG), or pass --allow-config-change to continue with these changes"
        )
    notes = [f"continuing with a changed config: {'; '.join(changes)}"] if changes else []
    kwargs, sampler_notes = resumed_sampler_kwargs(config, _saved_sampler(checkpoint), checkpoint)
    return RunStart(checkpoint, kwargs, changes, notes + sampler_notes)


def _saved_sampler(checkpoint: Path) -> Any:
    """The checkpoint's sampler state (None if its state.json cannot be read: loading it later says why)."""
    try:
        return read_state(checkpoint).sampler
    except (OSError, ValueError, TypeError):
        return None


def config_changes(run_dir: Path, config: TrainConfig) -> list[str]:
    """``key: old -> new`` for every setting that differs from the run's saved config (free keys left out)."""
    try:
        saved = load_config(run_dir / CONFIG)
    except ConfigError as err:
        return [f"{CONFIG}: the run's saved config cannot be read ({err})"]
    old, new = _flat(saved.model_dump()), _flat(config.model_dump())
    return [
        f"{key}: {old.get(key)!r} -> {new.get(key)!r}"
        for key in sorted(old.keys() | new.keys())
        if key not in FREE_TO_CHANGE and old.get(key) != new.get(key)
    ]


def _flat(data: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """Dotted keys of a config dump; the sampler's ``kwargs`` stay one value."""
    out = {}
    for key, value in data.items():
        if isinstance(value, dict) and key != "kwargs":
            out.update(_flat(value, f"{prefix}{key}."))
        else:
            out[f"{prefix}{key}"] = value
    return out


def claim(run_dir: Path, config: TrainConfig, start: RunStart) -> None:
    """Make the directory this run's: clear a run that never checkpointed, mark it, write the config."""
    run_dir.mkdir(parents=True, exist_ok=True)
    if start.resume_from is None:
        for name in OWN_ENTRIES:
            path = run_dir / name
            if path.is_dir():
                shutil.rmtree(path)
            elif path.exists():
                path.unlink()
    (run_dir / MARKER).write_text(json.dumps({"created_by": "openenv-prime train", "format": 1}) + "\n")
    if start.resume_from is None or start.config_changes:
        (run_dir / CONFIG).write_text(dump_toml(config))


def append_log(run_dir: Path, record: dict[str, Any]) -> None:
    with open(run_dir / LOG, "a") as f:
        f.write(json.dumps(record) + "\n")
        f.flush()


def truncate_log(run_dir: Path, step: int) -> None:
    """Drop the lines of steps after the checkpoint from the log and the eval episodes (a killed run may have
    logged the lost step)."""
    for name in (LOG, EPISODES_FILE):
        _drop_after(run_dir / name, step)


def _drop_after(log: Path, step: int) -> None:
    if not log.exists():
        return
    keep = []
    for line in log.read_text().splitlines():
        try:
            if json.loads(line).get("step", 0) <= step:
                keep.append(line)
        except ValueError:
            continue  # a half-written last line
    tmp = log.with_suffix(".tmp")
    tmp.write_text("".join(k + "\n" for k in keep))
    tmp.replace(log)
