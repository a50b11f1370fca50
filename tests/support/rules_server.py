"""An OpenEnv server (openenv's own classes) whose tasks exercise every episode rule, for tests that play the same
scripted episodes through `openenv-prime eval`, the verifiers taskset and the trainer.

Run as `PYTHONPATH=. python tests/support/rules_server.py PORT MAX_SESSIONS`. The action is one free-text field `answer` (at most 12
characters, which the schema says; and not "nope", which only the server knows: a VALIDATION_ERROR); the observation is one `message` that starts with
`task <id>:`. Split `test`, one task per kind (spec `{"id", "kind"}`):

- `onestep-a`, `onestep-b` (onestep): one step, reward 1.0 for "right", else 0.0;
- `delayed` and `flaky` (delayed): three steps, no reward until the third, which pays the share of "right" answers;
  on `flaky` the server drops the socket the first time an episode sends "drop" (WebSocket close 1011);
- `unscored`: one step that ends the episode without a reward;
- `endless`: never done, 0.25 per step (only a step limit ends it);
- `strict` (a textarena-like game): a reply must look like `[7]`; the first format error is answered with a
  message and `metadata.invalid_move = true`, the second ends the episode (reward 0.0, flagged the same way);
  `[7]` wins 1.0, another digit pays 0.0 and goes on;
- `strict-state`: the same game, flagged as textarena flags it: nothing in the observation, and after the second
  format error `state().raw_state.game_info["0"].invalid_move = true`;
- `crash`: the first step is unscored, every later one raises inside the environment (openenv answers an
  `EXECUTION_ERROR`), as dipg_safety_env's steps do;
- `broken`: every step raises that same error, whatever the action (dipg_safety_env from its first step);
- `dimension` (finrl_env's check): the answer is comma-separated numbers, one per stock, and there is one stock;
  another count raises "Action dimension mismatch: expected 1, got N. ..." (the action's fault, the session stays
  usable); one number pays 1.0 and ends the episode;
- `verbose` (repl_env's failing code): any answer but "ok" raises with a 9,600-character traceback whose last line
  says what was wrong ("NameError: The variable `true` is not defined"); "ok" pays 1.0 and ends the episode.

`GET /dropped` lists the episode ids whose socket was dropped.
"""

from __future__ import annotations

import json
import re
import sys
from typing import Any, Optional

sys.modules.setdefault("gradio", None)  # openenv's optional web UI: not needed, seconds to import

from openenv.core.env_server.http_server import create_app
from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.types import Action, Observation, State
from pydantic import Field, field_validator
from pydantic_core import PydanticCustomError

from tests.support.static_tasks import static_tasks

TASKS = [{"id": task_id, "kind": kind} for task_id, kind in (
    ("onestep-a", "onestep"), ("onestep-b", "onestep"), ("delayed", "delayed"), ("flaky", "delayed"),
    ("unscored", "unscored"), ("endless", "endless"), ("strict", "strict"), ("strict-state", "strict"),
    ("crash", "crash"), ("broken", "broken"), ("dimension", "dimension"), ("verbose", "verbose"),
)]
DUMP_ERROR = "'StepResult' object has no attribute 'model_dump'"
TRACEBACK = ("Traceback (most recent call last):\n" + "".join(
    f'  File "/app/env/repl/sandbox.py", line {100 + i}, in run_cell\n    exec(compile(code, "<cell>", "exec"), namespace)\n'
    for i in range(87)) + "NameError: The variable `true` is not defined")
FORMAT = re.compile(r"^\[(\d)\]$")
DROPPED: list[str] = []


class RulesAction(Action):
    answer: str = Field(max_length=12, description="the reply")

    @field_validator("answer")
    @classmethod
    def _not_nope(cls, answer: str) -> str:
        if answer == "nope":
            raise PydanticCustomError("nope", "'nope' is not an answer this game takes")  # a ValueError's text: openenv 0.4.1 cannot send it
        return answer


class RulesObservation(Observation):
    message: str = ""


class RulesState(State):
    raw_state: dict[str, Any] = Field(default_factory=dict)


class RulesEnvironment(static_tasks(TASKS, listed=True), Environment):
    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self) -> None:
        super().__init__()
        self._state = RulesState()
        self._task: dict[str, Any] = TASKS[0]
        self._right = 0
        self._errors = 0

    def reset(self, split: str = "test", index: int = 0, episode_id: Optional[str] = None, **kwargs: Any):
        self._task = TASKS[index]
        self._state = RulesState(episode_id=episode_id, step_count=0)
        self._right = self._errors = 0
        return self._say("say right", reward=None)

    def step(self, action: RulesAction, timeout_s: Optional[float] = None, **kwargs: Any):
        self._state.step_count += 1
        n, kind, answer = self._state.step_count, self._task["kind"], action.answer
        if kind == "onestep":
            return self._say("finished", reward=1.0 if answer == "right" else 0.0, done=True)
        if kind == "delayed":
            self._right += answer == "right"
            if n < 3:
                return self._say(f"step {n} of 3, say right", reward=None)
            return self._say("finished", reward=self._right / 3, done=True)
        if kind == "unscored":
            return self._say("finished", reward=None, done=True)
        if kind == "endless":
            return self._say(f"step {n}", reward=0.25)
        if kind == "crash" and n == 1:
            return self._say("step 1, say right", reward=None)
        if kind in ("crash", "broken"):
            raise AttributeError(DUMP_ERROR)
        if kind == "dimension":
            got = len(answer.split(","))
            if got != 1:
                raise ValueError(f"Action dimension mismatch: expected 1, got {got}. Actions should match "
                                 "config['action_space'] (= stock_dim)")
            return self._say("traded", reward=1.0, done=True)
        if kind == "verbose":
            if answer != "ok":
                raise NameError(TRACEBACK)
            return self._say("ran", reward=1.0, done=True)
        return self._strict(answer)

    def _strict(self, answer: str) -> RulesObservation:
        flag_in_observation = self._task["id"] == "strict"
        guess = FORMAT.match(answer)
        if guess is None:
            self._errors += 1
            flags = {"invalid_move": True} if flag_in_observation else {}
            if self._errors >= 2:
                if not flag_in_observation:
                    self._state.raw_state = {"game_info": {"0": {"invalid_move": True, "reason": "Invalid Move"}}}
                return self._say("game over", reward=0.0, done=True, metadata=flags)
            return self._say("invalid move, reply like [3]", reward=None, metadata=flags)
        if guess.group(1) == "7":
            return self._say("you win", reward=1.0, done=True)
        return self._say("try another number", reward=0.0)

    def _say(self, text: str, *, reward: float | None, done: bool = False, metadata: dict | None = None) -> RulesObservation:
        return RulesObservation(message=f"task {self._task['id']}: {text}", reward=reward, done=done, metadata=metadata or {})

    @property
    def state(self) -> RulesState:
        return self._state


class DropOnce:
    """ASGI wrapper: closes an episode's socket (code 1011) the first time that episode steps with answer "drop",
    as a server does whose keepalive gave up on a client; the episode id comes from the socket's reset."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] == "http" and scope["path"] == "/dropped":
            body = json.dumps(DROPPED).encode()
            await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"application/json")]})
            await send({"type": "http.response.body", "body": body})
            return
        if scope["type"] != "websocket":
            return await self.app(scope, receive, send)
        episode: dict[str, Any] = {}

        async def watched_receive():
            message = await receive()
            text = message.get("text") if message.get("type") == "websocket.receive" else None
            frame = json.loads(text) if text else {}
            data = frame.get("data") if isinstance(frame.get("data"), dict) else {}
            if frame.get("type") == "reset":
                episode["id"] = data.get("episode_id")
            elif frame.get("type") == "step" and data.get("answer") == "drop" and episode.get("id") not in DROPPED:
                DROPPED.append(episode.get("id"))
                await send({"type": "websocket.close", "code": 1011, "reason": "dropped by the test server"})
                return {"type": "websocket.disconnect", "code": 1011}
            return message

        return await self.app(scope, watched_receive, send)


if __name__ == "__main__":
    import uvicorn

    port, max_sessions = int(sys.argv[1]), int(sys.argv[2])
    app = create_app(RulesEnvironment, RulesAction, RulesObservation, env_name="rules", max_concurrent_envs=max_sessions)
    uvicorn.run(DropOnce(app), host="127.0.0.1", port=port, log_level="warning")
