"""How an eval is shown and kept: a rich per-family table, and a JSON file with results, config,
package versions and seed (everything needed to reproduce and compare runs)."""

from __future__ import annotations

import json
import os
import platform
import tempfile
from importlib import metadata
from pathlib import Path
from typing import Any

from rich.table import Table

from openenv_prime.evaluation.result import EvalResult

_PACKAGES = ("openenv-prime", "httpx", "websockets", "pydantic", "rich")
TOTAL_ROW = "total"


def package_versions() -> dict[str, str]:
    """Versions of Python and of the packages the eval path runs on ("not installed" for a missing one)."""
    versions = {"python": platform.python_version()}
    for name in _PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = "not installed"
    return versions


def rate(value: float, scored: int) -> float | None:
    """An accuracy or mean reward as reported: None (n/a) where no episode was scored, never a 0.0 that reads as a
    model that failed every task."""
    return value if scored else None


def _shown(value: float, scored: int) -> str:
    return "n/a" if not scored else f"{value:.3f}"


def run_warnings(result: EvalResult) -> list[str]:
    """Every warning of a run, as the console prints them and the JSON report keeps them: the run's own (the server,
    the budget, episodes that never end), then what its episodes show (truncated, ended invalid, errored)."""
    notes = list(result.warnings)
    total = len(result.results)
    if result.truncated:
        notes.append(f"{result.truncated} of {total} episodes were still running after --max-steps "
                     f"{result.config.max_steps} steps (truncated); raise --max-steps to let them finish")
    if result.ended_invalid:
        notes.append(f"{result.ended_invalid} of {total} episodes ended on an invalid action (the model's replies were "
                     "not actions, or the environment ended the episode for one); see each result's invalid_actions "
                     "and stop")
    if result.errored:
        first = next(r.error for r in result.results if r.stop == "error")
        notes.append(f"{result.errored} of {total} episodes failed inside the environment (stop 'error'; left out of "
                     f"accuracy); the first: {first or ''}")
    return notes


def family_table(result: EvalResult, title: str | None = None) -> Table:
    """Per-family accuracy, mean reward and counts, with a ``total`` row (distinct from a family named ``all``, the
    one family of tasks without families). Accuracy and mean reward read n/a where no episode was scored.
    ``ended invalid``: episodes that ended on an invalid action; ``invalid actions``: all the invalid actions the
    episodes' replies made; ``unscored``: episodes the environment ended without a reward; ``errored``: episodes the
    environment failed (both left out of accuracy)."""
    family = result.family_field or "family"
    table = Table(title=title or f"{result.env_name} / {result.split}: accuracy per {family}")
    table.add_column(family, justify="right")
    table.add_column("tasks", justify="right")
    table.add_column("solved", justify="right")
    table.add_column("accuracy", justify="right")
    table.add_column("mean reward", justify="right")
    table.add_column("truncated", justify="right")
    table.add_column("ended invalid", justify="right")
    table.add_column("invalid actions", justify="right")
    table.add_column("unscored", justify="right")
    table.add_column("errored", justify="right")
    for score in result.families:
        table.add_row(score.family, str(score.tasks), str(score.solved), _shown(score.accuracy, score.scored),
                      _shown(score.mean_reward, score.scored), str(score.truncated), str(score.ended_invalid),
                      str(score.invalid_actions), str(score.unscored), str(score.errored))
    solved = sum(s.solved for s in result.families)
    table.add_section()
    table.add_row(TOTAL_ROW, str(len(result.results)), str(solved), _shown(result.accuracy, result.scored),
                  _shown(result.mean_reward, result.scored), str(result.truncated), str(result.ended_invalid),
                  str(result.invalid_actions), str(result.unscored), str(result.errored))
    return table


def report_dict(result: EvalResult, model: dict[str, Any] | None = None) -> dict[str, Any]:
    """The JSON document of a run: seed, config, model, package versions, per-family scores and per-task results,
    and every warning the console printed. Accuracy and mean reward are null where no episode was scored."""
    return {
        "seed": result.config.seed,
        "env_name": result.env_name,
        "split": result.split,
        "family_field": result.family_field,
        "choices": result.choices,
        "config": result.config.model_dump(mode="json"),
        "model": model or {},
        "versions": package_versions(),
        "accuracy": rate(result.accuracy, result.scored),
        "mean_reward": rate(result.mean_reward, result.scored),
        "families": [{**s.model_dump(mode="json"), "accuracy": rate(s.accuracy, s.scored),
                      "mean_reward": rate(s.mean_reward, s.scored)} for s in result.families],
        "results": [r.model_dump(mode="json") for r in result.results],
        "episodes": result.episodes,
        "replies": result.replies,
        "reply_chars": result.reply_chars,
        "reconnects": result.reconnects,
        "truncated": result.truncated,
        "ended_invalid": result.ended_invalid,
        "invalid_actions": result.invalid_actions,
        "unscored": result.unscored,
        "errored": result.errored,
        "stopped": result.stopped,
        "warnings": run_warnings(result),
        "elapsed_s": result.elapsed_s,
    }


def check_writable(path: str | Path) -> Path:
    """Fail before a run, not after it: ``path`` must be a file path whose folder can be made and written to.

    Raises ValueError naming the path and what is wrong; creates the missing folders (as the write would)."""
    path = Path(path)
    if path.is_dir():
        raise ValueError(f"{path} is a directory; name a file to write the report to, e.g. {path / 'eval-results.json'}")
    if path.exists() and not os.access(path, os.W_OK):
        raise ValueError(f"{path} exists and is not writable; choose another report path")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=path.parent, prefix=f".{path.name}.", suffix=".check"):
            pass
    except OSError as exc:
        raise ValueError(f"cannot write the report to {path}: {exc.strerror or exc}; choose another path") from None
    return path


def write_json(path: str | Path, document: dict[str, Any]) -> Path:
    """Writes atomically (temp file + rename), so a reader never sees half a file."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as f:
            json.dump(document, f, indent=2)
            f.write("\n")
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path
