"""A run's log.jsonl, read once: its eval lines and its step lines, by step.

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


def read_log(run_dir: Path) -> RunLog:
    """Parse RUN_DIR/log.jsonl; FileNotFoundError when the directory holds none."""
    log = Path(run_dir) / "log.jsonl"
    if not log.is_file():
        raise FileNotFoundError(f"{run_dir}: no log.jsonl; pass a run directory written by `openenv-prime train`")
    lines = log.read_text().splitlines()
    out = RunLog(Path(run_dir))
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
