"""An MCP environment built on openenv's `MCPEnvironment` (the style of OpenEnv's echo_env).

Run as `PYTHONPATH=. python tests/play/mcp_server.py PORT MAX_SESSIONS` (openenv 0.4.1 or 0.10.0). Served with `CallToolAction` as
its action, as echo_env is: the reset observation's data sits only in `metadata`, tools are listed with
`ListToolsAction`, and tool results come back in the observation's `result`. Tools: `get_question()` returns
the task's question, `submit_answer(answer: int)` ends the episode with reward 1.0 when right, else 0.0.
Task API through the environment's hook methods: split `test`, four sums `{"id", "tier", "a", "b"}`.
"""

from __future__ import annotations

import sys
from typing import Any, Optional

from fastmcp import FastMCP
from openenv.core.env_server.http_server import create_app
from openenv.core.env_server.mcp_environment import MCPEnvironment
from openenv.core.env_server.mcp_types import CallToolAction, CallToolObservation
from openenv.core.env_server.types import Observation, State

from tests.support.static_tasks import static_tasks

TASKS = [
    {"id": "sum-1", "tier": 0, "a": 2, "b": 3},
    {"id": "sum-2", "tier": 0, "a": 4, "b": 4},
    {"id": "sum-3", "tier": 1, "a": 17, "b": 25},
    {"id": "sum-4", "tier": 1, "a": 58, "b": 39},
]


class SumToolsEnvironment(static_tasks(TASKS), MCPEnvironment):
    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self) -> None:
        mcp = FastMCP("sum_tools")
        self._task = TASKS[0]
        self._verdict: Optional[float] = None

        @mcp.tool
        def get_question() -> str:
            """The question of this episode."""
            return f"What is {self._task['a']} + {self._task['b']}?"

        @mcp.tool
        def submit_answer(answer: int) -> str:
            """Submit the final answer (an integer); this ends the episode."""
            self._verdict = 1.0 if answer == self._task["a"] + self._task["b"] else 0.0
            return "correct" if self._verdict else "wrong"

        super().__init__(mcp)
        self._state = State(step_count=0)

    def reset(self, split: str = "test", index: int = 0, episode_id: Optional[str] = None, **kwargs: Any) -> Observation:
        self._task, self._verdict = TASKS[index], None
        self._state = State(episode_id=episode_id, step_count=0, task_id=self._task["id"])  # the state names the task
        return Observation(done=False, reward=0.0, metadata={"status": "ready", "message": "Use the tools to answer the question."})

    def _step_impl(self, action, timeout_s=None, **kwargs: Any) -> Observation:
        return Observation(done=False, reward=0.0, metadata={"error": f"unknown action {type(action).__name__}"})

    def _finish(self, observation: Observation) -> Observation:
        if self._verdict is not None:
            observation.done, observation.reward = True, self._verdict
        return observation

    def step(self, action, timeout_s: Optional[float] = None, **kwargs: Any) -> Observation:
        self._state.step_count += 1
        return self._finish(super().step(action, timeout_s=timeout_s, **kwargs))

    async def step_async(self, action, timeout_s: Optional[float] = None, **kwargs: Any) -> Observation:
        self._state.step_count += 1
        return self._finish(await super().step_async(action, timeout_s=timeout_s, **kwargs))

    @property
    def state(self) -> State:
        return self._state


if __name__ == "__main__":
    import uvicorn

    port, max_sessions = int(sys.argv[1]), int(sys.argv[2])
    app = create_app(SumToolsEnvironment, CallToolAction, CallToolObservation, env_name="sum_tools", max_concurrent_envs=max_sessions)
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning")
