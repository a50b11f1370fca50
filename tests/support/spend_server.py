"""An OpenEnv server (openenv's own classes) that reports what each step cost it in the step's
``metadata["service_spend"]`` (OpenEnv issue #1382), for the tests of ``cost="spend"`` in TRL, the MLX trainer and the
prime-rl adapter.

Run as `PYTHONPATH=. python tests/support/spend_server.py PORT MAX_SESSIONS` (or with `spend_tasks.spend_server`).
The action is one free-text field `answer`; the observation one `question`; the tasks and which report a spend are
`spend_tasks.py`'s. Every episode is scored 1.0 when its last answer has an even number of characters, else 0.0, so a
model's groups come out mixed.
"""

from __future__ import annotations

import sys
from typing import Any, Optional

sys.modules.setdefault("gradio", None)  # openenv's optional web UI: not needed, seconds to import

from openenv.core.env_server.http_server import create_app
from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.types import Action, Observation, State

from tests.support.spend_tasks import SPLITS, TASKS, reports_spend


class SpendAction(Action):
    answer: str = ""


class SpendObservation(Observation):
    question: str = ""


class SpendEnvironment(Environment):
    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self) -> None:
        super().__init__()
        self._state = State()
        self._task: dict[str, Any] = TASKS[0]
        self._split = "train"

    # the Task API
    def list_splits(self) -> list[str]:
        return list(SPLITS)

    def num_tasks(self, split: str) -> int:
        return len(TASKS)

    def get_task(self, split: str, index: int) -> dict[str, Any]:
        return TASKS[index]

    def get_task_range(self, split: str, start: Optional[int] = None, stop: Optional[int] = None) -> list[dict]:
        return TASKS[start:stop]

    def list_tasks(self, split: str) -> list[dict]:
        return TASKS

    # the episode
    def reset(self, split: str = "train", index: int = 0, episode_id: Optional[str] = None, **kwargs: Any):
        self._task, self._split = TASKS[index], split
        self._state = State(episode_id=episode_id, step_count=0)
        return SpendObservation(question=f"task {self._task['id']}: answer anything", reward=None, done=False)

    def step(self, action: SpendAction, timeout_s: Optional[float] = None, **kwargs: Any):
        self._state.step_count += 1
        task, n = self._task, self._state.step_count
        metadata = {"service_spend": task["spend"]} if reports_spend(self._split, task) else {}
        if n < task["steps"]:
            return SpendObservation(question=f"task {task['id']}: step {n} done, answer again", reward=None,
                                    done=False, metadata=metadata)
        reward = 1.0 if len(action.answer) % 2 == 0 else 0.0
        return SpendObservation(question=f"task {task['id']}: finished", reward=reward, done=True, metadata=metadata)

    @property
    def state(self) -> State:
        return self._state


if __name__ == "__main__":
    import uvicorn

    port, max_sessions = int(sys.argv[1]), int(sys.argv[2])
    app = create_app(SpendEnvironment, SpendAction, SpendObservation, env_name="spend", max_concurrent_envs=max_sessions)
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning")
