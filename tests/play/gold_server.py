"""Environments whose observations carry the gold answer in every shape we have met, to prove no prompt shows it.

Run as `PYTHONPATH=. python tests/play/gold_server.py PORT MAX_SESSIONS {fields|tools}` (openenv 0.4.1 or 0.10.0). Both serve the same four
tasks through the Task API (split `test`, spec `{"id", "level", "question", "answer", "info", "solution"}`: the specs
hold the gold answer too, as a verifiers dataset's rows do); every gold value is `GOLD[i]`, written in lower case,
digits and dashes so that even the tiny trainer model's character vocabulary can spell it.

- `fields`: a plain environment with a free-text `reply` action and two steps per episode. Its observations carry the
  answer as a top-level `answer`, a camelCase `groundTruth`, inside a `task_spec` object, inside `info` (a JSON
  string, as verifiers' `info` often is), inside a list (`hints[].target`), deep in `details.reference.solution`,
  and in `metadata` (`correct_answer`, the whole task), after the reset and after the first step alike.
- `tools`: shaped like an environment that `openenv import` makes from a verifiers environment: an MCP environment
  whose reset observation has only `metadata` (`source_type`, the whole `task_spec` with its `answer`, and the chat
  `prompt`); its `check` tool answers with a result that holds the scoring state (`state.answer`, `state.info`)
  without ending the episode, and `submit` ends it.
"""

from __future__ import annotations

import contextlib
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Optional

from openenv.core.env_server.http_server import create_app
from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.types import Action, Observation, State
from pydantic import Field

from tests.support.static_tasks import static_tasks

GOLD = ["qzx-gold-7391", "qzx-gold-2846", "qzx-gold-5502", "qzx-gold-9164"]
TASKS = [
    {"id": f"gold-{i}", "level": i % 2, "question": f"what is {i + 2} plus {i + 3}?", "answer": GOLD[i],
     "info": json.dumps({"answer": GOLD[i], "source": "test"}), "solution": GOLD[i]}
    for i in range(len(GOLD))
]


def gold_in(texts: list[str]) -> list[tuple[str, str]]:
    """Every (gold value, text) pair where a text the model received shows a gold answer (empty: none does)."""
    return [(gold, text) for text in texts for gold in GOLD if gold in text]


@contextlib.contextmanager
def gold_serving(kind: str, log_dir: Path) -> Iterator[str]:
    """Serve the `kind` environment (under this interpreter's openenv) for a test; yields its URL, always stops it."""
    from tests.support.processes import free_port, serving

    port = free_port()
    url = f"http://127.0.0.1:{port}"
    with serving([sys.executable, __file__, str(port), "16", kind], f"{url}/health", log_dir / "server.log"):
        yield url


TaskAPI = static_tasks(TASKS)  # the same for both environments


class GoldAction(Action):
    reply: str = Field(..., description="The reply to the question.")


class GoldObservation(Observation):
    question: str = ""
    feedback: str = ""
    answer: str = ""
    groundTruth: str = ""
    task_spec: dict[str, Any] = Field(default_factory=dict)
    info: str = ""
    hints: list[dict[str, Any]] = Field(default_factory=list)
    details: dict[str, Any] = Field(default_factory=dict)


class GoldFieldsEnvironment(TaskAPI, Environment):
    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self) -> None:
        super().__init__()
        self._state = State()
        self._index = 0

    def _observation(self, feedback: str, done: bool, reward: Optional[float]) -> GoldObservation:
        task, gold = TASKS[self._index], GOLD[self._index]
        return GoldObservation(
            question=task["question"], feedback=feedback, answer=gold, groundTruth=gold, task_spec=dict(task),
            info=task["info"], hints=[{"text": "add the two numbers", "target": gold}],
            details={"level": task["level"], "reference": {"solution": gold}},
            done=done, reward=reward, metadata={"correct_answer": gold, "task": dict(task)},
        )

    def reset(self, split: str = "test", index: int = 0, episode_id: Optional[str] = None, **kwargs: Any):
        self._index = index
        self._state = State(episode_id=episode_id, step_count=0)
        return self._observation("", False, None)

    def step(self, action: GoldAction, timeout_s: Optional[float] = None, **kwargs: Any):
        self._state.step_count += 1
        if self._state.step_count < 2:
            return self._observation("Noted. Reply once more to finish.", False, 0.0)
        right = str(2 * self._index + 5) in action.reply
        return self._observation("Done.", True, 1.0 if right else 0.0)

    @property
    def state(self) -> State:
        return self._state


def tools_environment():
    """The `openenv import`-shaped MCP environment (built lazily: fastmcp is only needed for it)."""
    from fastmcp import FastMCP
    from openenv.core.env_server.mcp_environment import MCPEnvironment

    class GoldToolsEnvironment(TaskAPI, MCPEnvironment):
        SUPPORTS_CONCURRENT_SESSIONS = True

        def __init__(self) -> None:
            mcp = FastMCP("gold_tools")
            self._index = 0
            self._verdict: Optional[float] = None

            @mcp.tool
            def check(completion: str) -> dict:
                """Check a completion without ending the episode."""
                task = TASKS[self._index]
                return {"verdict": "keep going", "state": {"answer": GOLD[self._index], "info": task["info"],
                                                           "completion": completion}}

            @mcp.tool
            def submit(completion: str) -> dict:
                """Submit the completion; this ends the episode."""
                self._verdict = 1.0 if str(2 * self._index + 5) in completion else 0.0
                return {"reward": self._verdict, "state": {"answer": GOLD[self._index]}}

            super().__init__(mcp)
            self._state = State(step_count=0)

        def reset(self, split: str = "test", index: int = 0, episode_id: Optional[str] = None, **kwargs: Any):
            self._index, self._verdict = index, None
            self._state = State(episode_id=episode_id, step_count=0)
            task = TASKS[index]
            prompt = [{"role": "system", "content": "Answer in words."}, {"role": "user", "content": task["question"]}]
            return Observation(done=False, reward=None,
                               metadata={"source_type": "verifiers", "task_spec": dict(task), "prompt": prompt})

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

    return GoldToolsEnvironment


if __name__ == "__main__":
    import uvicorn

    port, max_sessions, kind = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    if kind == "tools":
        from openenv.core.env_server.mcp_types import CallToolAction, CallToolObservation

        app = create_app(tools_environment(), CallToolAction, CallToolObservation, env_name="gold_tools",
                         max_concurrent_envs=max_sessions)
    else:
        app = create_app(GoldFieldsEnvironment, GoldAction, GoldObservation, env_name="gold_fields",
                         max_concurrent_envs=max_sessions)
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning")
