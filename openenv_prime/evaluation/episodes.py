"""Episodes you can read: an eval's episodes as JSONL rows beside its summary, so a reward of 0 can be traced to what
the model was asked and what it replied.

One row per episode: its task (``key``, ``split``, ``index``, ``family``), the messages the model saw and its replies
(``messages``), each step's reward (``step_rewards``), the episode's reward, stop reason, invalid actions and the
environment's error, and the tokens generated where the policy reports them; an in-training eval's rows also carry
the optimizer ``step``. `openenv-prime eval` writes every episode (``--episodes``); an :class:`EvalHarness` given
``episodes=`` writes the first few of each family per eval; `openenv-prime show` prints them.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterable

from openenv_prime.evaluation.result import EvalResult, TaskResult

EPISODES_FILE = "episodes.jsonl"
"""The episodes file of a run directory (an MLX trainer's run, a TRL run's output folder)."""
DEFAULT_EPISODES_PER_FAMILY = 4
"""Episodes kept per family and eval during training: enough to read what the model does, few enough to keep every
eval's."""


def episode_row(result: TaskResult, **about: Any) -> dict[str, Any]:
    """One episode as a JSON object: ``about`` (e.g. the training ``step``) first, then every field of ``result``,
    the conversation and the step rewards included."""
    return {**about, **result.model_dump(mode="json"), "step_rewards": list(result.step_rewards),
            "messages": [dict(m) for m in result.messages]}


def first_per_family(results: Iterable[TaskResult], per_family: int | None) -> list[TaskResult]:
    """The first ``per_family`` results of each family, in their order (all of them when ``per_family`` is None)."""
    if per_family is None:
        return list(results)
    kept, seen = [], {}
    for result in results:
        seen[result.family] = seen.get(result.family, 0) + 1
        if seen[result.family] <= per_family:
            kept.append(result)
    return kept


def episode_rows(result: EvalResult, *, per_family: int | None = None, **about: Any) -> list[dict[str, Any]]:
    """The eval's episodes as rows (the first ``per_family`` of each family; None: all), each with ``about``."""
    return [episode_row(r, **about) for r in first_per_family(result.results, per_family)]


def write_episodes(path: str | Path, rows: Iterable[dict[str, Any]], *, append: bool = False) -> Path:
    """Write ``rows`` to the JSONL file ``path`` (appended to it when ``append``: one file across a run's evals)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a" if append else "w") as f:
        for row in rows:
            f.write(json.dumps(row) + "\n")
    return path


def beside(report: str | Path) -> Path:
    """The episodes file written beside a report: ``eval-results.json`` -> ``eval-results.episodes.jsonl``."""
    report = Path(report)
    return report.with_name(f"{report.stem}.episodes.jsonl")


def episodes_file(run: str | Path) -> Path:
    """The episodes file of ``run``: a JSONL file itself, a run directory's ``episodes.jsonl``, or the file an
    `openenv-prime eval` report names (else the one beside it)."""
    run = Path(run)
    if run.is_dir():
        found = run / EPISODES_FILE
    elif run.suffix == ".json" and run.is_file():
        named = json.loads(run.read_text()).get("episodes_file")
        found = run.parent / named if named else beside(run)  # the report names it relative to its own folder
    else:
        found = run
    if not found.is_file():
        raise FileNotFoundError(f"{run}: no episodes file ({found} does not exist); pass the episodes JSONL, a run "
                                f"directory with {EPISODES_FILE}, or an `openenv-prime eval` report written with episodes")
    return found


def read_episodes(path: str | Path) -> list[dict[str, Any]]:
    """The rows of an episodes file; a torn last line (a killed run) is ignored, a damaged line elsewhere is an error."""
    path = Path(path)
    lines = path.read_text().splitlines()
    rows = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError as err:
            if number == len(lines):
                break
            raise ValueError(f"{path}:{number}: not a JSON line ({err.msg}); the episodes file is damaged") from None
    return rows
