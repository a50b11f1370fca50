"""A small grid world built with openenv's own classes, shaped like OpenEnv's grid_world_env.

Run as `PYTHONPATH=. python tests/play/grid_server.py PORT MAX_SESSIONS` (openenv 0.4.1 or 0.10.0). The action is one Enum field
(`{"action": {"$ref": "#/$defs/MoveAction"}}`: UP/DOWN/LEFT/RIGHT); the observation has `x`, `y` and a
`message`; every step that misses the goal pays -0.1 and reaching it pays 1.0 and ends the episode. UP/DOWN
change x and LEFT/RIGHT change y, as in grid_world. Task API through the environment's hook methods:
split `test`, six tasks `{"id", "tier", "start", "goal"}`, tier = the number of moves the goal is away.
"""

from __future__ import annotations

import sys
from enum import Enum
from typing import Any, Optional

from openenv.core.env_server.http_server import create_app
from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.types import Action, Observation, State
from pydantic import Field

from tests.support.static_tasks import static_tasks

SIZE = 5
TASKS = [
    {"id": "grid-a", "tier": 1, "start": [0, 0], "goal": [1, 0]},
    {"id": "grid-b", "tier": 1, "start": [2, 2], "goal": [2, 1]},
    {"id": "grid-c", "tier": 2, "start": [0, 0], "goal": [1, 1]},
    {"id": "grid-d", "tier": 2, "start": [4, 4], "goal": [4, 2]},
    {"id": "grid-e", "tier": 3, "start": [0, 0], "goal": [2, 1]},
    {"id": "grid-f", "tier": 3, "start": [3, 0], "goal": [1, 1]},
]
MOVES = {"UP": (-1, 0), "DOWN": (1, 0), "LEFT": (0, -1), "RIGHT": (0, 1)}


class MoveAction(str, Enum):
    UP = "UP"
    DOWN = "DOWN"
    LEFT = "LEFT"
    RIGHT = "RIGHT"


class GridAction(Action):
    action: MoveAction = Field(..., description="The direction to move.")


class GridObservation(Observation):
    x: int = Field(..., description="Current X position")
    y: int = Field(..., description="Current Y position")
    message: str = Field("", description="Status message")


class GridEnvironment(static_tasks(TASKS, listed=True), Environment):
    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self) -> None:
        super().__init__()
        self._state = State()
        self._pos = [0, 0]
        self._goal = [0, 0]

    # ---- episodes -----------------------------------------------------------------------------------
    def reset(self, split: str = "test", index: int = 0, episode_id: Optional[str] = None, **kwargs: Any):
        task = TASKS[index]
        self._pos, self._goal = list(task["start"]), list(task["goal"])
        self._state = State(episode_id=episode_id, step_count=0)
        return GridObservation(x=self._pos[0], y=self._pos[1], message=f"Reach the goal at {self._goal}.", done=False, reward=0.0)

    def step(self, action: GridAction, timeout_s: Optional[float] = None, **kwargs: Any):
        self._state.step_count += 1
        dx, dy = MOVES[action.action.value]
        self._pos = [min(max(self._pos[0] + dx, 0), SIZE - 1), min(max(self._pos[1] + dy, 0), SIZE - 1)]
        if self._pos == self._goal:
            return GridObservation(x=self._pos[0], y=self._pos[1], message="You found the goal!", done=True, reward=1.0)
        return GridObservation(x=self._pos[0], y=self._pos[1], message="Keep going...", done=False, reward=-0.1)

    @property
    def state(self) -> State:
        return self._state


if __name__ == "__main__":
    import uvicorn

    port, max_sessions = int(sys.argv[1]), int(sys.argv[2])
    app = create_app(GridEnvironment, GridAction, GridObservation, env_name="grid", max_concurrent_envs=max_sessions)
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning")
