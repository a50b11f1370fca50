"""A run's log.jsonl, mirrored to TensorBoard and Weights & Biases (``report_to``) as scalars at each record's step.

Why a follower of the log rather than a second logger: the log is the run's one record (step lines from the trainer,
eval lines from the eval harness), so the trackers show exactly what it holds and there is nothing to keep in step.
After each step (and its eval, if one was due) the trainer calls ``sync()``, which logs the lines appended since.

Names: a step line's numbers go under ``train/`` by their path in the line (``train/loss``, ``train/reward``,
``train/seconds/generation``, ``train/sampler/draws``); an eval line's under the names the TRL callback logs
(``openenv/eval/FAMILY/accuracy``, ``openenv/eval/accuracy``, ``openenv/sampler/episodes``, ``openenv/sampler/cost``)
and its other numbers under ``openenv/eval/`` (``openenv/eval/mean_reward``, ``openenv/eval/n/FAMILY``). Lists,
strings and other kinds of lines (``config_change``) are not logged.

Resume: a resumed run's log holds the steps up to its checkpoint (later lines were dropped), and every session
replays it before following it. TensorBoard's event files (RUN_DIR/tensorboard/) are rewritten from it, so they hold
each of its records once, whatever an earlier session wrote. The W&B run keeps its id (RUN_DIR/wandb/run_id): offline
(the default here, unless WANDB_MODE is set), each session's run directory holds the whole run so far and replaces
the earlier session's, so ``wandb sync`` uploads it once; online, W&B keeps the steps it has and gets the later ones.

tensorboardX and wandb (the ``report`` extra) are imported only when a tracker opens.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
from importlib.util import find_spec
from pathlib import Path
from typing import Any, Iterable, Protocol

TENSORBOARD_DIR = "tensorboard"
WANDB_DIR = "wandb"  # where wandb.init(dir=RUN_DIR) keeps its files
# report_to's names -> the library each one needs
TRACKER_LIBRARIES = {"tensorboard": "tensorboardX", "wandb": "wandb"}
_EVAL_NAMED = {"type", "step", "accuracy", "overall", "episodes", "cost"}


class TrackerUnavailable(ImportError):
    """A tracker named in ``report_to`` whose library is not installed; the message says what to install."""


def require_trackers(names: Iterable[str]) -> None:
    """Raise :class:`TrackerUnavailable` when a library the trackers ``names`` need is missing (found without being
    imported, so the trainer can say so before the model loads)."""
    for name in names:
        library = TRACKER_LIBRARIES[name]
        if find_spec(library) is None:
            raise TrackerUnavailable(
                f'report_to = ["{name}"] needs {library}, which is not installed: pip install "openenv-prime[report]"'
            )


def record_scalars(record: dict[str, Any]) -> dict[str, float]:
    """A log line's numbers under the trackers' names (see the module's docstring); {} for lines with none."""
    if record.get("type") == "step":
        return _numbers({k: v for k, v in record.items() if k not in ("type", "step")}, "train/")
    if record.get("type") != "eval":
        return {}
    named = {f"openenv/eval/{family}/accuracy": acc for family, acc in record["accuracy"].items()}
    named["openenv/eval/accuracy"] = record["overall"]
    named.update({f"openenv/sampler/{name}": record[name] for name in ("episodes", "cost") if name in record})
    rest = {k: v for k, v in record.items() if k not in _EVAL_NAMED}
    return {**_numbers(named, ""), **_numbers(rest, "openenv/eval/")}


def _numbers(values: dict[str, Any], prefix: str) -> dict[str, float]:
    """Every int or float in ``values`` (nested dicts by their path joined with "/"), under ``prefix``."""
    out: dict[str, float] = {}
    for key, value in values.items():
        if isinstance(value, dict):
            out.update(_numbers(value, f"{prefix}{key}/"))
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            out[f"{prefix}{key}"] = float(value)
    return out


class _Tracker(Protocol):
    def log(self, scalars: dict[str, float], step: int) -> None: ...

    def flush(self) -> None: ...

    def close(self) -> None: ...


class _TensorBoard:
    """Event files in RUN_DIR/tensorboard/, rewritten from the log by each session."""

    def __init__(self, run_dir: Path):
        from tensorboardX import SummaryWriter

        folder = run_dir / TENSORBOARD_DIR
        shutil.rmtree(folder, ignore_errors=True)  # the replayed log holds all an earlier session wrote
        self.writer = SummaryWriter(str(folder))

    def log(self, scalars: dict[str, float], step: int) -> None:
        for tag, value in scalars.items():
            self.writer.add_scalar(tag, value, step)

    def flush(self) -> None:
        self.writer.flush()

    def close(self) -> None:
        self.writer.close()


class _WandB:
    """One W&B run per run directory, named after it, with the run's config; offline unless WANDB_MODE is set."""

    def __init__(self, run_dir: Path, config: dict[str, Any]):
        import wandb

        folder = run_dir / WANDB_DIR
        folder.mkdir(parents=True, exist_ok=True)
        id_file = folder / "run_id"
        run_id = id_file.read_text().strip() if id_file.is_file() else secrets.token_hex(4)  # W&B's id alphabet
        id_file.write_text(run_id + "\n")
        self.run = wandb.init(project=os.environ.get("WANDB_PROJECT", "openenv-prime"), name=run_dir.resolve().name,
                              id=run_id, resume="allow", dir=str(run_dir), config=config,
                              mode=os.environ.get("WANDB_MODE", "offline"))
        self.first_step = self.run.step  # online, a resumed run's next step: what W&B has is not sent again
        current = Path(self.run.dir).parent
        for earlier in folder.glob(f"offline-run-*-{run_id}"):  # this session's replay holds all they held
            if earlier != current:
                shutil.rmtree(earlier)

    def log(self, scalars: dict[str, float], step: int) -> None:
        if step >= self.first_step:
            self.run.log(scalars, step=step)

    def flush(self) -> None:
        """W&B writes in the background; nothing to do."""

    def close(self) -> None:
        self.run.finish()


class Trackers:
    """The trackers following a run's log; ``sync()`` logs the lines appended since the last call, ``close()`` the
    last ones and closes them. With no trackers both do nothing."""

    def __init__(self, trackers: list[_Tracker], log: Path):
        self.trackers = trackers
        self.log = log
        self._offset = 0  # bytes of the log already logged

    def sync(self) -> None:
        if not self.trackers or not self.log.exists():
            return
        with open(self.log, "rb") as f:
            f.seek(self._offset)
            new = f.read()
        complete = new[: new.rfind(b"\n") + 1]  # a line being written is logged at the next sync
        self._offset += len(complete)
        for line in complete.splitlines():
            record = json.loads(line)
            scalars = record_scalars(record)
            if scalars:
                for tracker in self.trackers:
                    tracker.log(scalars, record["step"])
        for tracker in self.trackers:
            tracker.flush()

    def close(self) -> None:
        self.sync()
        for tracker in self.trackers:
            tracker.close()


def open_trackers(names: Iterable[str], run_dir: Path, log: Path, config: dict[str, Any]) -> Trackers:
    """Open the trackers ``names`` ("tensorboard", "wandb") for the run in ``run_dir`` and log what ``log`` already
    holds (a resumed run's steps); ``config`` (the run's settings) goes to W&B."""
    names = list(names)
    require_trackers(names)
    trackers: list[_Tracker] = []
    for name in names:
        trackers.append(_TensorBoard(run_dir) if name == "tensorboard" else _WandB(run_dir, config))
    opened = Trackers(trackers, log)
    opened.sync()
    return opened
