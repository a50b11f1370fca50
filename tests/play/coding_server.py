"""A small coding environment built with openenv's own classes, shaped like OpenEnv's coding_env.

Run as `PYTHONPATH=. python tests/play/coding_server.py PORT MAX_SESSIONS` (openenv 0.4.1 or 0.10.0). The action is
coding_env's: one free-text `code` field, with a class docstring and (here) a field description. The observation
has `stdout`, `stderr` and `exit_code` as coding_env's does, plus the task's `prompt`. A program that raises (a
`SyntaxError` included) exits 1 with its traceback in `stderr`, as a Python process would. The episode ends with
1.0 when the program prints the task's answer; any other step pays 0.0 and goes on. Task API through the
environment's hook methods: split `test`, four tasks `{"id", "tier", "prompt"}`.

The program runs in this process: the server is for tests only, and its replies come from the tests' own policies.
"""

from __future__ import annotations

import contextlib
import io
import sys
import traceback
from typing import Any, Optional

from openenv.core.env_server.http_server import create_app
from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.types import Action, Observation, State
from pydantic import Field

from tests.support.static_tasks import static_tasks

TASKS = [
    {"id": "code-a", "tier": 1, "prompt": "Print the sum of 2 and 3."},
    {"id": "code-b", "tier": 1, "prompt": "Print the product of 4 and 6."},
    {"id": "code-c", "tier": 2, "prompt": "Print the sum of the numbers 1 to 10."},
    {"id": "code-d", "tier": 2, "prompt": "Print 2 to the power of 10."},
]
ANSWERS = ["5", "24", "55", "1024"]  # what a correct program prints; never in an observation
PROGRAMS = ["print(2 + 3)", "print(4 * 6)", "print(sum(range(1, 11)))", "print(2 ** 10)"]  # a correct program each


class CodeAction(Action):
    """Represents a single code execution request."""

    code: str = Field(..., description="Python code to execute; what it prints is its answer")


class CodeObservation(Observation):
    """Result of executing code."""

    prompt: str = Field("", description="The task")
    stdout: str = ""
    stderr: str = ""
    exit_code: int = 0


def run(code: str) -> tuple[str, str, int]:
    """stdout, stderr and the exit code of ``code`` run as a Python program."""
    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out):
            exec(compile(code, "<code>", "exec"), {"__name__": "__main__"})
    except BaseException:  # noqa: BLE001 - a program's every failure is its exit code and traceback
        return out.getvalue(), traceback.format_exc(), 1
    return out.getvalue(), "", 0


class CodingEnvironment(static_tasks(TASKS, listed=True), Environment):
    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self) -> None:
        super().__init__()
        self._state = State()
        self._index = 0

    def reset(self, split: str = "test", index: int = 0, episode_id: Optional[str] = None, **kwargs: Any):
        self._index = index
        self._state = State(episode_id=episode_id, step_count=0)
        return CodeObservation(prompt=TASKS[index]["prompt"], done=False, reward=0.0)

    def step(self, action: CodeAction, timeout_s: Optional[float] = None, **kwargs: Any):
        self._state.step_count += 1
        stdout, stderr, exit_code = run(action.code)
        solved = exit_code == 0 and stdout.strip() == ANSWERS[self._index]
        return CodeObservation(stdout=stdout, stderr=stderr, exit_code=exit_code, done=solved,
                               reward=1.0 if solved else 0.0)

    @property
    def state(self) -> State:
        return self._state


if __name__ == "__main__":
    import uvicorn

    port, max_sessions = int(sys.argv[1]), int(sys.argv[2])
    app = create_app(CodingEnvironment, CodeAction, CodeObservation, env_name="coding", max_concurrent_envs=max_sessions)
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning")
