"""MCP environments (openenv's `MCPEnvironment`, `CallToolAction` as the action) shaped like two that TRL users bring,
written here from their published shapes (none of their code):

- `echo` (echo_env, the environment of TRL's own OpenEnv quick start): one tool, `echo_message(message: str)`, which
  answers the message back. The task (in the reset's metadata): echo one word; echoing it ends the episode with
  reward 1.0, echoing anything else answers the echo and pays nothing.
- `calendar` (calendar_env's tools, served the MCP way): 37 tools, each with required arguments and a page-long
  description (about 140,000 characters in all). The task: `create_event(day, title)` on the day the reset's metadata
  names, which ends the episode (reward 1.0 on the right day, else 0.0); any other tool answers and pays nothing.

Each has a Task API (split `test`, four tasks `{"id", "tier", "word", "day"}`). Run as
`PYTHONPATH=. python tests/play/mcp_tool_envs.py PORT MAX_SESSIONS {echo|calendar}` (openenv 0.4.1 or 0.10.0).
"""

from __future__ import annotations

import sys
from typing import Any, Callable, Optional

from fastmcp import FastMCP
from fastmcp.tools import Tool
from openenv.core.env_server.http_server import create_app
from openenv.core.env_server.mcp_environment import MCPEnvironment
from openenv.core.env_server.mcp_types import CallToolAction, CallToolObservation
from openenv.core.env_server.types import Observation, State
from pydantic import Field

from tests.play.wild_envs import calendar_tools
from tests.support.static_tasks import static_tasks

TASKS = [{"id": f"task-{i}", "tier": i % 2, "word": word, "day": day}
         for i, (word, day) in enumerate([("apple", 3), ("river", 11), ("stone", 19), ("cloud", 27)])]


class SchemaTool(Tool):
    """A tool declared by its JSON input schema (calendar_env's tools are written that way), answered by a function
    of its arguments."""

    answer: Callable[[dict], str] = Field(exclude=True)

    async def run(self, arguments: dict[str, Any]):
        return self.convert_result(self.answer(arguments))


class _ToolTasks(static_tasks(TASKS), MCPEnvironment):
    SUPPORTS_CONCURRENT_SESSIONS = True
    INSTRUCTIONS = ""

    def __init__(self) -> None:
        mcp = FastMCP(type(self).__name__)
        self._task = TASKS[0]
        self._verdict: Optional[float] = None
        self.add_tools(mcp)
        super().__init__(mcp)
        self._state = State(step_count=0)

    def add_tools(self, mcp: FastMCP) -> None:
        raise NotImplementedError

    def reset(self, split: str = "test", index: int = 0, episode_id: Optional[str] = None, **kwargs: Any) -> Observation:
        self._task, self._verdict = TASKS[index], None
        self._state = State(episode_id=episode_id, step_count=0)
        return Observation(done=False, reward=0.0, metadata={"message": self.INSTRUCTIONS.format(**self._task)})

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


class EchoEnvironment(_ToolTasks):
    INSTRUCTIONS = "Echo the word '{word}' with the echo tool."

    def add_tools(self, mcp: FastMCP) -> None:
        @mcp.tool
        def echo_message(message: str) -> str:
            """Echo back the message you give it."""
            if message == self._task["word"]:
                self._verdict = 1.0
            return message


class CalendarEnvironment(_ToolTasks):
    INSTRUCTIONS = "Schedule a meeting titled 'sync' on day {day} of this month."

    def add_tools(self, mcp: FastMCP) -> None:
        for tool in calendar_tools():
            answer = self._create_event if tool["name"] == "create_event" else (lambda arguments: '{"ok": true}')
            mcp.add_tool(SchemaTool(name=tool["name"], description=tool["description"],
                                    parameters=tool["inputSchema"], answer=answer))

    def _create_event(self, arguments: dict) -> str:
        self._verdict = 1.0 if arguments.get("day") == self._task["day"] else 0.0
        return '{"created": true}'


ENVIRONMENTS = {"echo": EchoEnvironment, "calendar": CalendarEnvironment}


if __name__ == "__main__":
    import uvicorn

    port, max_sessions, name = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    app = create_app(ENVIRONMENTS[name], CallToolAction, CallToolObservation, env_name=f"{name}_tools",
                     max_concurrent_envs=max_sessions)
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning")
