"""The scripted replies for `rules_server.py`'s tasks, and what the episode rules make of them.

A reply depends only on what the model was shown: the task named in the first observation (`task <id>:`) and
how many replies it has given so far, so a policy, a scripted OpenAI-compatible server and a scripted generator
all reply alike. `EXPECTED` is (reward, invalid actions, steps, stop) under `RULES` (max_steps 4, the default
max_invalid_actions 3, reward "sum", the invalid flags also looked up in state()).
"""

from __future__ import annotations

import contextlib
import re
import sys
from collections.abc import Iterator
from pathlib import Path

from tests.support.processes import free_port, serving

SERVER = Path(__file__).with_name("rules_server.py")

TASK = re.compile(r"task ([a-z-]+):")

SCRIPTS = {
    "onestep-a": ["", "far too long reply", "nope", "right"],  # empty, too long for the schema, rejected by the server
    "onestep-b": ["", "", "", ""],  # the fourth invalid reply ends the episode
    "delayed": ["right", "", "wrong", "right"],  # unscored steps until the third
    "flaky": ["right", "drop", "right"],  # the server drops the socket at "drop": the episode is replayed
    "unscored": ["anything"],  # the environment ends it without a reward
    "endless": ["a", "b", "c", "d", "e"],  # cut off after max_steps
    "strict": ["5", "also bad"],  # two format errors: the environment ends the episode, flagged in metadata
    "strict-state": ["5", "also bad"],  # the same, flagged only in state() (textarena)
    "crash": ["right", "right"],  # the environment raises from the second step on, alike: the episode ends unscored
    "broken": ["a", "b", "c", "d"],  # four different actions, one same error: the environment's failure, unscored
    "dimension": ["0.5,0.5", "0.5"],  # the environment's error names the mistake; the model reads it and fixes it
    "verbose": ["true", "ok"],  # a long traceback reaches the model cut, its last line kept
}

RULES = {"max_steps": 4, "invalid_flags_in_state": True}

EXPECTED = {
    "onestep-a": (1.0, 3, 1, "done"),
    "onestep-b": (0.0, 4, 0, "invalid_action"),
    "delayed": (2 / 3, 1, 3, "done"),
    "flaky": (2 / 3, 0, 3, "done"),
    "unscored": (None, 0, 1, "done"),
    "endless": (1.0, 0, 4, "max_steps"),
    "strict": (0.0, 2, 2, "invalid_action"),
    "strict-state": (0.0, 1, 2, "invalid_action"),
    "crash": (None, 0, 1, "error"),
    "broken": (None, 0, 0, "error"),
    "dimension": (1.0, 1, 1, "done"),
    "verbose": (1.0, 1, 1, "done"),
}


def reply(task: str, turn: int) -> str:
    """The reply to task ``task`` after ``turn`` earlier replies."""
    script = SCRIPTS[task]
    return script[min(turn, len(script) - 1)]


def reply_to_messages(messages: list[dict]) -> str:
    """The reply for a chat prompt (system, user and assistant messages)."""
    first = next(m["content"] for m in messages if m["role"] == "user")
    return reply(TASK.search(first).group(1), sum(m["role"] == "assistant" for m in messages))


@contextlib.contextmanager
def rules_server(log_path: Path, max_sessions: int = 32) -> Iterator[str]:
    """Serve `rules_server.py` (openenv 0.4.1, this interpreter) on a free port; yields its base URL."""
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    with serving([sys.executable, str(SERVER), str(port), str(max_sessions)], f"{url}/health", log_path):
        yield url
