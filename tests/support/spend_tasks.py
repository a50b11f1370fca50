"""The tasks of `spend_server.py` and a way to serve it; standard library only, so a test whose interpreter has no
openenv (`patches/check`'s prime-rl venv) can read what the server reports and start it with one that has.

Splits `train` and `test` hold the same 8 tasks (spec `{"id", "family", "steps", "spend"}`), in two families:
`one` (tasks 0-3), one step that reports a spend of `spend`; `two` (tasks 4-7), two steps that report `spend`
each. Split `partial` holds the same tasks, but its family `two` reports no spend at all (an environment that
reports spend for some calls only).
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tests.support.processes import free_port, server_python, serving

SERVER = Path(__file__).with_name("spend_server.py")
SPLITS = ("train", "test", "partial")
SHAPES = [("one", 1)] * 4 + [("two", 2)] * 4  # (family, steps) of each task, in index order
TASKS = [{"id": f"{family}-{index}", "family": family, "steps": steps, "spend": 0.25 * (index + 1)}
         for index, (family, steps) in enumerate(SHAPES)]


def reports_spend(split: str, task: dict[str, Any]) -> bool:
    """Whether the steps of ``task`` report a spend on ``split``."""
    return not (split == "partial" and task["family"] == "two")


def episode_spend(task: dict[str, Any]) -> float:
    """What a whole episode of ``task`` reports: its steps' spends summed."""
    return task["spend"] * task["steps"]


@contextlib.contextmanager
def spend_server(log_path: Path, max_sessions: int = 32) -> Iterator[str]:
    """Serve `spend_server.py` on a free port (with $OPENENV_PRIME_SERVER_PYTHON, else this interpreter); yields its
    base URL."""
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    python = server_python() or sys.executable
    with serving([python, str(SERVER), str(port), str(max_sessions)], f"{url}/health", log_path):
        yield url
