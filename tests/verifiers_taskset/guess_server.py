"""A small multi-step OpenEnv environment for the taskset tests: guess a number.

Run as `PYTHONPATH=. python tests/verifiers_taskset/guess_server.py PORT MAX_SESSIONS`. The action has two fields (an int `guess` and a
free `note`), so replies must be JSON objects. Each wrong guess gets reward -0.25 and feedback; the hit
gets 1.0 and ends the episode. Tasks: split `test`, six targets 1..6, spec `{"id", "level", "target"}`."""

from __future__ import annotations

import sys
from typing import Any, Optional

from openenv.core.env_server.http_server import create_app
from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.types import Action, ConcurrencyConfig, Observation, State

from tests.support.static_tasks import static_tasks

TASKS = [{"id": f"guess-{t}", "level": t % 2, "target": t} for t in range(1, 7)]


class GuessAction(Action):
    guess: int
    note: str = ""


class GuessObservation(Observation):
    feedback: str = ""
    hint: str = ""


class GuessEnvironment(static_tasks(TASKS), Environment):
    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self) -> None:
        super().__init__()
        self._state = State()
        self._target = 0

    def reset(self, split: str = "test", index: int = 0, episode_id: Optional[str] = None, **kwargs: Any):
        self._target = TASKS[index]["target"]
        self._state = State(episode_id=episode_id, step_count=0)
        return GuessObservation(feedback="Guess a number from 1 to 6.", hint="json", done=False, reward=None)

    def step(self, action: GuessAction, timeout_s: Optional[float] = None, **kwargs: Any):
        self._state.step_count += 1
        if action.guess == self._target:
            return GuessObservation(feedback="Right.", hint="", done=True, reward=1.0)
        direction = "low" if action.guess < self._target else "high"
        return GuessObservation(feedback=f"{action.guess} is too {direction}.", hint="", done=False, reward=-0.25)

    @property
    def state(self) -> State:
        return self._state


if __name__ == "__main__":
    import uvicorn

    port, max_sessions = int(sys.argv[1]), int(sys.argv[2])
    app = create_app(
        GuessEnvironment, GuessAction, GuessObservation, env_name="guess",
        concurrency_config=ConcurrencyConfig(max_concurrent_envs=max_sessions),
    )
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning")
