"""Environments shaped like three OpenEnv environments outside the compatibility matrix (calendar_env, repl_env,
dipg_safety_env at OpenEnv 685de411), written here from their published shapes (none of their code): how each
failed a new user is what matters.

- `calendar` (calendar_env): a plain action `{"action_type": "ListToolsAction" | "ToolCallAction", "tool_name":
  Optional[str], "arguments": dict = {}}` (not openenv's MCP `CallToolAction`, though the field names match); the
  reset shows `success: true` and says how to start only in its metadata's `message`; `ListToolsAction` answers a
  `tools_list` of 37 tools in one field (about 140,000 characters: long descriptions, full input schemas). The task:
  `create_event` on the day the message names (reward 1, done); any other tool answers and pays nothing.
- `repl` (repl_env): `{"code": str = "", "is_final": bool = False, "final_answer": Optional[str] = None}`, "Action
  containing Python code to execute". The code runs; printing `FINAL(answer)` ends the episode, paid 1 when the answer
  is right. A `final_answer` without `is_final` changes nothing, so replies put there never end an episode.
- `flaky` and `broken` (dipg_safety_env's upstream bug): every step of a `broken` episode raises inside the
  environment (`'StepResult' object has no attribute 'model_dump'`, which openenv answers as an `EXECUTION_ERROR`);
  `flaky` raises so only on its level-1 tasks and plays level-0 ones (a one-field `answer`, paid 1 when right).

Each has a Task API (split `test`, twelve tasks `{"id", "level", "seed"}`). Run as
`PYTHONPATH=. python tests/play/wild_envs.py PORT MAX_SESSIONS {calendar|repl|flaky|broken}` (openenv 0.4.1 or 0.10.0).
"""

from __future__ import annotations

import contextlib
import io
import random
import re
import sys
from typing import Any, Dict, List, Literal, Optional

from openenv.core.env_server.http_server import create_app
from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.types import Action, Observation, State
from pydantic import Field

from tests.support.static_tasks import static_tasks

TASKS = [{"id": f"task-{i}", "level": i % 2, "seed": 7 * i + 1} for i in range(12)]
TOOL_COUNT = 37


def day_of(index: int) -> int:
    return random.Random(TASKS[index]["seed"]).randint(1, 28)


def numbers_of(index: int) -> tuple[int, int]:
    rng = random.Random(TASKS[index]["seed"])
    return rng.randint(10, 99), rng.randint(10, 99)


class _Tasks(static_tasks(TASKS), Environment):
    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self) -> None:
        super().__init__()
        self._state = State()
        self._index = 0

    def _begin(self, index: int, episode_id: Optional[str]) -> None:
        self._index = index
        self._state = State(episode_id=episode_id, step_count=0)

    @property
    def state(self) -> State:
        return self._state


# ---- calendar (calendar_env) -----------------------------------------------------------------------------------
class CalendarAction(Action):
    """
    Generic wrapper action for tool access.

    action_type values:
    - "ListToolsAction": list available tools
    - "ToolCallAction": execute a tool by name
    """

    action_type: Literal["ListToolsAction", "ToolCallAction"] = Field(..., description="Type of action to perform")
    tool_name: Optional[str] = Field(None, description="Name of tool to call (required for ToolCallAction)")
    arguments: Optional[Dict[str, Any]] = Field(default_factory=dict, description="Arguments for the tool")


class CalendarObservation(Observation):
    success: bool = Field(True, description="Whether the action succeeded")
    error_message: Optional[str] = Field(None, description="Error message if action failed")
    tools_list: Optional[List[Dict[str, Any]]] = Field(None, description="Available tools (for ListToolsAction)")
    tool_result: Optional[Dict[str, Any]] = Field(None, description="Result of a tool call (for ToolCallAction)")


def _tool(name: str, summary: str, properties: dict, required: list[str]) -> dict:
    details = "\n".join(f"        - {key}: {spec.get('description', '')} Long explanation of how the calendar API "
                        "treats this field, its formats, its defaults and its interactions with the other fields."
                        for key, spec in properties.items())
    body = ("\n\n        Usage notes: " + "This endpoint follows the calendar API v3 conventions. " * 40)
    return {"name": name, "description": f"{summary}\n\n        Arguments:\n{details}{body}",
            "inputSchema": {"type": "object", "properties": properties, "required": required,
                            "additionalProperties": False}}


def calendar_tools() -> list[dict]:
    """37 tools, each description a page long: the whole list is about 140,000 characters."""
    tools = [_tool("create_event", "Create an event on the user's calendar.",
                   {"day": {"type": "integer", "description": "Day of the month (1-28)."},
                    "title": {"type": "string", "description": "The event's title."}}, ["day", "title"])]
    for i in range(TOOL_COUNT - 1):
        tools.append(_tool(f"calendar_op_{i:02d}", f"Calendar operation number {i} on events and lists.",
                           {f"field_{j}": {"type": "string", "description": f"Parameter {j} of the operation."}
                            for j in range(6)}, ["field_0"]))
    return tools


class CalendarEnvironment(_Tasks):
    def reset(self, split: str = "test", index: int = 0, episode_id: Optional[str] = None, **kwargs: Any):
        self._begin(index, episode_id)
        return CalendarObservation(done=False, reward=0.0, metadata={
            "episode_id": episode_id, "available_tools": TOOL_COUNT,
            "message": f"Calendar environment ready. Use ListToolsAction to discover tools. Task: schedule a "
                       f"meeting titled 'sync' on day {day_of(index)} of this month."})

    def step(self, action: CalendarAction, timeout_s: Optional[float] = None, **kwargs: Any):
        self._state.step_count += 1
        if action.action_type == "ListToolsAction":
            return CalendarObservation(tools_list=calendar_tools(), done=False, reward=0.0)
        if action.tool_name is None:
            return CalendarObservation(success=False, error_message="tool_name is required for ToolCallAction",
                                       done=False, reward=0.0)
        if action.tool_name == "create_event":
            right = (action.arguments or {}).get("day") == day_of(self._index)
            return CalendarObservation(tool_result={"created": True}, done=True, reward=1.0 if right else 0.0)
        return CalendarObservation(tool_result={"ok": True, "tool": action.tool_name}, done=False, reward=0.0)


# ---- repl (repl_env) -------------------------------------------------------------------------------------------
class ReplAction(Action):
    """Action containing Python code to execute in the REPL.

    Finish by printing FINAL(answer) from the code, or set is_final=True with final_answer.
    """

    code: str = Field(default="", description="Python code to execute")
    is_final: bool = Field(default=False, description="Whether this action signals the final answer")
    final_answer: Optional[str] = Field(default=None, description="Final answer if is_final=True")


class ReplObservation(Observation):
    stdout: str = ""
    stderr: str = ""
    task: str = ""
    iteration: int = 0


class ReplEnvironment(_Tasks):
    def reset(self, split: str = "test", index: int = 0, episode_id: Optional[str] = None, **kwargs: Any):
        self._begin(index, episode_id)
        a, b = numbers_of(index)
        return ReplObservation(stdout=f"Compute {a} * {b} with Python and finish with print('FINAL(<the product>)').",
                               done=False, reward=0.0)

    def step(self, action: ReplAction, timeout_s: Optional[float] = None, **kwargs: Any):
        self._state.step_count += 1
        a, b = numbers_of(self._index)
        if action.is_final:
            return ReplObservation(done=True, reward=float(str(action.final_answer).strip() == str(a * b)))
        out, err = io.StringIO(), ""
        try:
            with contextlib.redirect_stdout(out):
                exec(action.code, {"__builtins__": {"print": print, "range": range, "sum": sum, "str": str, "int": int}})  # noqa: S102
        except Exception as exc:  # the REPL shows the error, as a REPL does
            err = f"{type(exc).__name__}: {exc}"
        final = re.search(r"FINAL\((.*?)\)", out.getvalue())
        if final:
            return ReplObservation(stdout=out.getvalue(), done=True, reward=float(final.group(1).strip() == str(a * b)))
        return ReplObservation(stdout=out.getvalue(), stderr=err, iteration=self._state.step_count, done=False,
                               reward=0.0)


# ---- flaky and broken (dipg_safety_env) ------------------------------------------------------------------------
class AnswerAction(Action):
    answer: str = Field(..., description="The answer.")


class QuestionObservation(Observation):
    question: str = ""


class FlakyEnvironment(_Tasks):
    FAILS = {1}  # the levels whose steps raise

    def reset(self, split: str = "test", index: int = 0, episode_id: Optional[str] = None, **kwargs: Any):
        self._begin(index, episode_id)
        a, b = numbers_of(index)
        return QuestionObservation(question=f"What is {a} + {b}?", done=False, reward=0.0)

    def step(self, action: AnswerAction, timeout_s: Optional[float] = None, **kwargs: Any):
        if TASKS[self._index]["level"] in self.FAILS:
            raise AttributeError("'StepResult' object has no attribute 'model_dump'")
        a, b = numbers_of(self._index)
        return QuestionObservation(done=True, reward=float(action.answer.strip() == str(a + b)))


class BrokenEnvironment(FlakyEnvironment):
    FAILS = {0, 1}


ENVIRONMENTS = {
    "calendar": (CalendarEnvironment, CalendarAction, CalendarObservation),
    "repl": (ReplEnvironment, ReplAction, ReplObservation),
    "flaky": (FlakyEnvironment, AnswerAction, QuestionObservation),
    "broken": (BrokenEnvironment, AnswerAction, QuestionObservation),
}


if __name__ == "__main__":
    import uvicorn

    port, max_sessions, name = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    environment, action, observation = ENVIRONMENTS[name]
    app = create_app(environment, action, observation, env_name=name, max_concurrent_envs=max_sessions)
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning")
