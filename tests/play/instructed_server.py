"""An environment that brings its own system prompt, and scores only the format it asks for.

`field`: its reset observation has `system_prompt` ("... inside <answer></answer> tags ...") beside the `question`;
`declared`: the observation has none, and the split's `/splits` entry declares it instead. The one action field
`reply` takes the model's text; a reply scores 1.0 when it holds `<answer>SUM</answer>`, and a bare correct sum scores
0.0. Four tasks (split `test`, specs `{"id", "level", "a", "b"}`), one step each. Run as
`PYTHONPATH=. python tests/play/instructed_server.py PORT MAX_SESSIONS {field|declared}` (openenv 0.4.1 or 0.10.0).
"""

from __future__ import annotations

import re
import sys
from typing import Any, Optional

from openenv.core.env_server.http_server import create_app
from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.types import Action, Observation, State
from pydantic import Field

from tests.support.static_tasks import static_tasks

SYSTEM_PROMPT = "Add the two numbers. Think if you like, then give the sum inside <answer></answer> tags."
TASKS = [{"id": f"sum-{i}", "level": i % 2, "a": 17 * i + 5, "b": 9 * i + 8} for i in range(4)]
_ANSWER = re.compile(r"<answer>\s*(-?\d+)\s*</answer>")


class InstructedAction(Action):
    reply: str = Field(..., description="The model's reply.")


class InstructedObservation(Observation):
    system_prompt: str = ""
    question: str = ""
    feedback: str = ""


class InstructedEnvironment(static_tasks(TASKS), Environment):
    SUPPORTS_CONCURRENT_SESSIONS = True
    DECLARED = False  # True: the system prompt is in /splits, not in the observation

    def list_splits(self) -> list[dict[str, Any]]:
        return [{"name": "test", "type": "test", **({"system_prompt": SYSTEM_PROMPT} if self.DECLARED else {})}]

    def __init__(self) -> None:
        super().__init__()
        self._state = State()
        self._task = TASKS[0]

    def reset(self, split: str = "test", index: int = 0, episode_id: Optional[str] = None, **kwargs: Any):
        self._task = TASKS[index]
        self._state = State(episode_id=episode_id, step_count=0)
        return InstructedObservation(system_prompt="" if self.DECLARED else SYSTEM_PROMPT, question=f"What is {self._task['a']} + {self._task['b']}?",
                                     done=False, reward=None)

    def step(self, action: InstructedAction, timeout_s: Optional[float] = None, **kwargs: Any):
        self._state.step_count += 1
        found = _ANSWER.search(action.reply)
        right = found is not None and int(found.group(1)) == self._task["a"] + self._task["b"]
        return InstructedObservation(feedback="Correct." if right else "Wrong.", done=True, reward=1.0 if right else 0.0)

    @property
    def state(self) -> State:
        return self._state


if __name__ == "__main__":
    import uvicorn

    port, max_sessions = int(sys.argv[1]), int(sys.argv[2])
    InstructedEnvironment.DECLARED = sys.argv[3] == "declared"
    app = create_app(InstructedEnvironment, InstructedAction, InstructedObservation, env_name="instructed",
                     max_concurrent_envs=max_sessions)
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning")
