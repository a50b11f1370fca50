"""A training log read once: its eval lines (the eval harness's records) and its step lines, by step.

The log is a JSONL file: an `EvalHarness` log of any loop (TRL's callback, a plain loop), or RUN_DIR/log.jsonl of an
MLX trainer run, which holds both kinds of line.

A later line for the same step replaces the earlier one (a resumed run re-evaluating, or re-running the step its
checkpoint did not hold); a torn last line (a killed run) is ignored; a damaged line anywhere else is an error.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass
class RunLog:
    run_dir: Path
    evals: dict[int, dict[str, Any]] = field(default_factory=dict)
    steps: dict[int, dict[str, Any]] = field(default_factory=dict)


def log_file(path: Path) -> Path:
    """``path`` itself when it is a file, else the log in the directory: its log.jsonl (an MLX run) or evals.jsonl."""
    path = Path(path)
    if path.is_file():
        return path
    for name in ("log.jsonl", "evals.jsonl"):
        if (path / name).is_file():
            return path / name
    raise FileNotFoundError(f"{path}: no log.jsonl or evals.jsonl; pass a run directory written by `openenv-prime "
                            "train`, or the JSONL log an EvalHarness writes (log=...)")


def read_log(run_dir: Path) -> RunLog:
    """Parse the log of ``run_dir`` (see :func:`log_file`); FileNotFoundError when there is none."""
    log = log_file(run_dir)
    lines = log.read_text().splitlines()
    out = RunLog(log.parent)
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as err:
            if number == len(lines):
                break
            raise ValueError(f"{log}:{number}: not a JSON line ({err.msg}); the log is damaged") from None
        kind = record.get("type")
        if kind in ("eval", "step"):
            (out.evals if kind == "eval" else out.steps)[int(record["step"])] = record
    return out
