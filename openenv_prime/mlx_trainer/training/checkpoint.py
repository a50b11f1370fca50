"""Checkpoints that make ``--resume`` continue exactly where an uninterrupted run would be.

``RUN_DIR/checkpoints/step_XXXXXX/`` holds the LoRA weights and optimizer state (safetensors) and a
``state.json`` with counters, sampler state and the eval history. The python and mlx RNGs are
reseeded from (seed, step) at the start of every step, so the counters fix the RNG states too. Each one
is written into a temporary folder and renamed into place, so a SIGKILL leaves either the previous
complete checkpoint or the new one, never half of one.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import mlx.core as mx
import mlx.nn as nn
import mlx.optimizers as optim
from mlx.utils import tree_flatten, tree_unflatten

from openenv_prime.mlx_trainer.training.lora import load_adapters, save_adapters

CHECKPOINT_VERSION = 1
"""The layout of a trainer checkpoint's state (its ``version`` key), apart from the sampler state inside it."""


@dataclass
class TrainerState:
    """Everything besides tensors that a resumed run needs."""

    step: int = 0
    episodes: int = 0
    tokens: int = 0
    sampler: dict[str, Any] = field(default_factory=dict)
    evals: list[dict[str, Any]] = field(default_factory=list)
    finished: bool = False


def seed_step(seed: int, step: int) -> None:
    """Reseed python's and mlx's global RNGs for ``step``: a resumed run draws what an uninterrupted one would."""
    derived = (seed * 1_000_003 + step) % 2**63
    random.seed(derived)
    mx.random.seed(derived)


def checkpoint_dir(run_dir: Path, step: int) -> Path:
    return run_dir / "checkpoints" / f"step_{step:06d}"


def save_checkpoint(run_dir: Path, model: nn.Module, optimizer: optim.Optimizer, state: TrainerState, keep: int) -> Path:
    target = checkpoint_dir(run_dir, state.step)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
    try:
        save_adapters(model, tmp / "adapters.safetensors")
        opt_state = dict(tree_flatten(optimizer.state))
        mx.save_safetensors(str(tmp / "optimizer.safetensors"), opt_state)
        payload = {"version": CHECKPOINT_VERSION, **state.__dict__}
        (tmp / "state.json").write_text(json.dumps(payload))
        _fsync_dir(tmp)
        if target.exists():
            shutil.rmtree(target)
        os.rename(tmp, target)
        _fsync_dir(target.parent)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    _prune(run_dir, keep)
    return target


def latest_checkpoint(run_dir: Path) -> Path | None:
    root = run_dir / "checkpoints"
    if not root.is_dir():
        return None
    done = sorted(p for p in root.glob("step_*") if (p / "state.json").is_file())
    return done[-1] if done else None


def read_state(path: Path) -> TrainerState:
    """A checkpoint's counters, sampler state and eval history, without its tensors."""
    payload = json.loads((path / "state.json").read_text())
    if payload.pop("version", None) != CHECKPOINT_VERSION:
        raise ValueError(f"checkpoint {path} has an unknown format version; it was written by another openenv-prime release")
    return TrainerState(**payload)


def load_checkpoint(path: Path, model: nn.Module, optimizer: optim.Optimizer) -> TrainerState:
    """Restore LoRA weights and optimizer state into the given objects; return the rest."""
    state = read_state(path)
    load_adapters(model, path / "adapters.safetensors")
    opt = mx.load(str(path / "optimizer.safetensors"))
    if opt:
        optimizer.state = tree_unflatten(list(opt.items()))
    mx.eval(model.trainable_parameters(), optimizer.state)
    return state


def _prune(run_dir: Path, keep: int) -> None:
    root = run_dir / "checkpoints"
    done = sorted(p for p in root.glob("step_*") if (p / "state.json").is_file())
    for old in done[:-keep]:
        shutil.rmtree(old, ignore_errors=True)
    for stale in root.glob(".step_*"):
        if stale.is_dir():
            shutil.rmtree(stale, ignore_errors=True)


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
