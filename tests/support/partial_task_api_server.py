"""OpenEnv servers with a partial Task API, none, or a reset that ignores the task, built from openenv's classes.

Run as ``python partial_task_api_server.py PORT`` (with openenv 0.4.1 or 0.10.0): one process serves every KIND
below at ``http://127.0.0.1:PORT/KIND`` (one openenv app each, mounted under its own path). The game: the observation
asks "Reply with the number N."; replying N pays 1.0 and anything else 0.0, in one step. Split ``test`` holds six
tasks, spec ``{"id": "n-N", "level": N % 2, "target": N}`` for N = 11..16. KIND is one of:

- ``list-tasks-only``: of the Task API only ``list_tasks``; reset(split, index) plays the task.
- ``no-splits``: the Task API without ``list_splits``; reset(split, index) plays the task.
- ``no-task-api``: no Task API at all; reset(seed) plays N = 10 + seed (a task list drives it).
- ``ignores-reset``: a full Task API, but reset() takes no split/index and deals the tasks in turn
  (as OpenEnv's reasoning_gym env does).
- ``constant-reset``: a full Task API, but reset() takes no split/index and always plays the first task.
"""

from __future__ import annotations

import json
import sys
from typing import Any, Optional

from openenv.core.env_server.http_server import create_app
from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.types import Action, ConcurrencyConfig, Observation, State

TARGETS = list(range(11, 17))
TASKS = [{"id": f"n-{n}", "level": n % 2, "target": n} for n in TARGETS]
KINDS = ("list-tasks-only", "no-splits", "no-task-api", "ignores-reset", "constant-reset")


def seed_task_lines(split: str = "test") -> list[str]:
    """A task list (JSONL lines) for the ``no-task-api`` kind: reset(seed=s) plays N = 10 + s; level is N's parity."""
    return [json.dumps({"split": split, "id": f"seed-{s}", "level": (10 + s) % 2, "reset": {"seed": s}}) for s in range(1, 7)]


class SayAction(Action):
    answer: str


class SayObservation(Observation):
    prompt: str = ""


class _Game(Environment):
    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self) -> None:
        super().__init__()
        self._state = State()
        self._target: int | None = None

    def _start(self, target: int, episode_id: Optional[str]) -> SayObservation:
        self._target = target
        self._state = State(episode_id=episode_id, step_count=0)
        return SayObservation(prompt=f"Reply with the number {target}.", done=False, reward=None)

    def step(self, action: SayAction, timeout_s: Optional[float] = None, **kwargs: Any) -> SayObservation:
        if self._target is None:
            raise RuntimeError("no task loaded: reset first")
        self._state.step_count += 1
        right = action.answer.strip() == str(self._target)
        return SayObservation(prompt="Right." if right else "Wrong.", done=True, reward=1.0 if right else 0.0)

    @property
    def state(self) -> State:
        return self._state


class _Listed(_Game):
    def list_tasks(self, split: str) -> list[dict]:
        if split != "test":
            raise ValueError(f"unknown split {split!r}")
        return TASKS


class ListTasksOnly(_Listed):
    def reset(self, seed: Optional[int] = None, episode_id: Optional[str] = None, split: str = "test", index: int = 0, **kwargs: Any):
        return self._start(TASKS[index]["target"], episode_id)


class NoSplits(ListTasksOnly):
    def num_tasks(self, split: str) -> int:
        return len(self.list_tasks(split))

    def get_task(self, split: str, index: int) -> dict:
        return self.list_tasks(split)[index]

    def get_task_range(self, split: str, start: Optional[int] = None, stop: Optional[int] = None) -> list[dict]:
        return self.list_tasks(split)[start:stop]


class NoTaskAPI(_Game):
    def reset(self, seed: Optional[int] = None, episode_id: Optional[str] = None):
        return self._start(10 + (seed or 0), episode_id)


_DEALT = {"count": 0}  # per process: the next task an ignoring reset deals


class IgnoresReset(NoSplits):
    def list_splits(self) -> list[str]:
        return ["test"]

    def reset(self, seed: Optional[int] = None, episode_id: Optional[str] = None):
        _DEALT["count"] += 1
        return self._start(TARGETS[_DEALT["count"] % len(TARGETS)], episode_id)


class ConstantReset(IgnoresReset):
    def reset(self, seed: Optional[int] = None, episode_id: Optional[str] = None):
        return self._start(TARGETS[0], episode_id)


CLASSES = dict(zip(KINDS, (ListTasksOnly, NoSplits, NoTaskAPI, IgnoresReset, ConstantReset)))


if __name__ == "__main__":
    import uvicorn

    from starlette.applications import Starlette
    from starlette.routing import Mount

    apps = [
        Mount(f"/{kind}", create_app(cls, SayAction, SayObservation, env_name="say",
                                     concurrency_config=ConcurrencyConfig(max_concurrent_envs=32)))
        for kind, cls in CLASSES.items()
    ]
    uvicorn.run(Starlette(routes=apps), host="127.0.0.1", port=int(sys.argv[1]), log_level="warning")
