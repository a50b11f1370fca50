"""Environments shaped like tbench2_env and finrl_env (OpenEnv 685de411), written here from their published shapes
(none of their code): where the package's guess of the action format fails them is what matters.

- `tbench` (tbench2_env): action `{"action_type": str = "exec", "command": str = "", "session_id": Optional[str],
  "block": bool = True, "wait_seconds": Optional[float], "file_path": str = "", "content": str = ""}`; unlike the
  real one, its docstring states the legal `action_type` values (the real one states none: an action card says them).
  A task asks for a file holding a word; `exec` runs `echo WORD > FILE` (the one command its toy shell knows) and
  `evaluate` ends the episode, paid 1 when the file holds the word. Any other `action_type` is an error the session
  survives (openenv answers it as an execution error).
- `finrl` (finrl_env): action `{"actions": list[float]}` ("one per stock", normalized between -1 and 1); observation a
  flat `state` ([balance, prices..., holdings..., indicators...]) described only in the observation's docstring,
  `portfolio_value`, `date`. Level-0 tasks trade 1 stock, level-1 tasks 2; a list of another length raises "Action
  dimension mismatch" (the session survives). Prices rise, so buying pays: each step's reward is the mean of the
  actions; three steps a day each.

Each has a Task API (split `test`, four tasks `{"id", "level", "seed"}`). Run as
`PYTHONPATH=. python tests/play/bench_envs.py PORT MAX_SESSIONS {tbench|finrl} [ACTIONS.jsonl]`: every action a step
receives is appended to ACTIONS.jsonl when given, so a test sees what was sent.
"""

from __future__ import annotations

import json
import re
import sys
from typing import Any, List, Optional

from openenv.core.env_server.http_server import create_app
from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.types import Action, Observation, State
from pydantic import Field

from tests.support.static_tasks import static_tasks

TASKS = [{"id": f"task-{i}", "level": i % 2, "seed": 5 * i + 2} for i in range(4)]
WORDS = ["apple", "river", "stone", "cloud"]
ACTION_LOG: str | None = None


def _logged(action: Action) -> None:
    if ACTION_LOG is not None:
        with open(ACTION_LOG, "a", encoding="utf-8") as log:
            log.write(json.dumps(action.model_dump(exclude={"metadata"})) + "\n")


class _Tasks(static_tasks(TASKS), Environment):
    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self) -> None:
        super().__init__()
        self._state = State()

    def _begin(self, index: int, episode_id: Optional[str]) -> None:
        self._index = index
        self._state = State(episode_id=episode_id, step_count=0)

    @property
    def state(self) -> State:
        return self._state


# ---- tbench (tbench2_env) ----------------------------------------------------------------------------------------
class TbenchAction(Action):
    """Action for interacting with a TB2 task session.

    action_type: "exec" (run the command in the shell), "view" (show the session's output), "evaluate" (run the task's tests; ends the episode)
    """

    action_type: str = Field(default="exec")
    command: str = Field(default="")
    session_id: Optional[str] = Field(default=None)
    block: bool = Field(default=True)
    wait_seconds: Optional[float] = Field(default=None)
    file_path: str = Field(default="")
    content: str = Field(default="")


class TbenchObservation(Observation):
    instruction: str = ""
    output: str = ""
    error: str = ""
    action_type: str = ""


class TbenchEnvironment(_Tasks):
    def reset(self, split: str = "test", index: int = 0, episode_id: Optional[str] = None, **kwargs: Any):
        self._begin(index, episode_id)
        self._files: dict[str, str] = {}
        return TbenchObservation(instruction=self._instruction(), action_type="reset", done=False, reward=0.0)

    def _instruction(self) -> str:
        return f"Create the file answer.txt holding the word {WORDS[self._index]}."

    def step(self, action: TbenchAction, timeout_s: Optional[float] = None, **kwargs: Any):
        _logged(action)
        self._state.step_count += 1
        seen = dict(instruction=self._instruction(), action_type=action.action_type)
        if action.action_type == "exec":
            written = re.fullmatch(r"\s*echo\s+['\"]?(\w+)['\"]?\s*>\s*(\S+)\s*", action.command)
            if written is None:
                return TbenchObservation(**seen, output=f"sh: {action.command.split(' ')[0]}: command not found",
                                         done=False, reward=0.0)
            self._files[written.group(2)] = written.group(1)
            return TbenchObservation(**seen, output="", done=False, reward=0.0)
        if action.action_type == "view":
            return TbenchObservation(**seen, output="\n".join(sorted(self._files)), done=False, reward=0.0)
        if action.action_type == "evaluate":
            passed = self._files.get("answer.txt") == WORDS[self._index]
            return TbenchObservation(**seen, output="1 passed" if passed else "1 failed", done=True,
                                     reward=float(passed))
        raise ValueError(f"Unsupported action_type: {action.action_type}")


# ---- finrl (finrl_env) -------------------------------------------------------------------------------------------
class FinrlAction(Action):
    """
    Action for the trading environment.

    Attributes:
        actions: Array of action values, one per stock. Values are normalized
                 between -1 and 1: positive buys, negative sells.
    """

    actions: List[float]


class FinrlObservation(Observation):
    """
    Observation of the trading environment.

    Attributes:
        state: Flattened state vector. Structure: [balance, prices..., holdings..., indicators...]
        portfolio_value: Total value of the portfolio (cash + holdings)
        date: Current trading date
    """

    state: List[float]
    portfolio_value: float = 0.0
    date: str = ""


class FinrlEnvironment(_Tasks):
    def reset(self, split: str = "test", index: int = 0, episode_id: Optional[str] = None, **kwargs: Any):
        self._begin(index, episode_id)
        self._stocks = 1 + TASKS[index]["level"]
        return self._observe(0.0, False)

    def _observe(self, reward: float, done: bool) -> FinrlObservation:
        day = self._state.step_count
        prices = [10.0 + day + stock for stock in range(self._stocks)]
        holdings = [0.0] * self._stocks
        indicators = [0.5, 50.0] * self._stocks
        return FinrlObservation(state=[1000.0, *prices, *holdings, *indicators], portfolio_value=1000.0,
                                date=f"2024-01-0{day + 1}", done=done, reward=reward)

    def step(self, action: FinrlAction, timeout_s: Optional[float] = None, **kwargs: Any):
        _logged(action)
        if len(action.actions) != self._stocks:
            raise ValueError(f"Action dimension mismatch: expected {self._stocks}, got {len(action.actions)}. "
                             "Actions should match config['action_space'] (= stock_dim).")
        self._state.step_count += 1
        return self._observe(sum(action.actions) / self._stocks, self._state.step_count >= 3)


ENVIRONMENTS = {
    "tbench": (TbenchEnvironment, TbenchAction, TbenchObservation),
    "finrl": (FinrlEnvironment, FinrlAction, FinrlObservation),
}


if __name__ == "__main__":
    import uvicorn

    port, max_sessions, name = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    ACTION_LOG = sys.argv[4] if len(sys.argv) > 4 else None
    environment, action, observation = ENVIRONMENTS[name]
    app = create_app(environment, action, observation, env_name=name, max_concurrent_envs=max_sessions)
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning")
