"""A toy OpenEnv environment a random tiny model can learn in seconds, served like chain_sum.

Family "0": "say 7:" -> "7".  Family "1": "rep D:" -> "D" (copy the digit).  The reward is strict:
1.0 only when the whole reply is the answer.
Family "2" takes two steps: "say 7:" -> "7", then "say 8:" -> "8"; the first step pays no reward (None), the
second pays the share of right replies (0, 0.5 or 1). Family "3" is one step that is never scored (reward None).
An answer longer than 3 characters is an invalid action (the server rejects it). With ``--no-task-api`` the
game has no Task API and ``reset(level=L, seed=S)`` plays level L (digit S), as a task list asks.
Run as a script, it serves over uvicorn on a free port and prints ``listening on http://HOST:PORT``:

    python tests/mlx_trainer/toy_env.py --levels 0 --max-sessions 256
"""

from __future__ import annotations

import argparse
import functools
import sys
from typing import Any, Optional

sys.modules.setdefault("gradio", None)  # openenv's optional web UI: not needed, seconds to import

from openenv.core.env_server.http_server import create_app
from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.types import Action, Observation, State
from pydantic import Field

PER_LEVEL = {"train": 20, "test": 10}


TWO_STEP = (("say 7:", "7"), ("say 8:", "8"))


class ToyAction(Action):
    answer: str = Field(max_length=3, description="the reply")


class ToyObservation(Observation):
    question: str = ""
    task: dict[str, Any] = Field(default_factory=dict)


def toy_task(level: int, digit: int) -> dict[str, Any]:
    question, answer = {0: ("say 7:", "7"), 1: (f"rep {digit}:", str(digit)), 2: TWO_STEP[0],
                        3: ("say 7:", "7")}[level]
    return {"level": level, "question": question, "answer": answer}


class _ToyGame(Environment):
    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self, levels: tuple[int, ...] = (0,)):
        super().__init__()
        self.levels = levels
        self._task: dict[str, Any] | None = None
        self._right = 0
        self._state = State()

    def _start(self, task: dict[str, Any], episode_id: Optional[str]) -> ToyObservation:
        self._task = task
        self._state = State(episode_id=episode_id, step_count=0)
        self._right = 0
        return ToyObservation(question=task["question"], task=task, done=False, reward=None)

    def step(self, action: ToyAction, timeout_s: Optional[float] = None, **kwargs: Any) -> ToyObservation:
        if self._task is None:
            raise RuntimeError("call reset first")
        self._state.step_count += 1
        level = self._task["level"]
        if level == 2:
            self._right += action.answer == TWO_STEP[self._state.step_count - 1][1]
            if self._state.step_count < len(TWO_STEP):
                return ToyObservation(question=TWO_STEP[1][0], task=self._task, done=False, reward=None)
            return ToyObservation(question="", task=self._task, done=True, reward=self._right / len(TWO_STEP))
        if level == 3:
            return ToyObservation(question="", task=self._task, done=True, reward=None)
        reward = 1.0 if action.answer == self._task["answer"] else 0.0
        return ToyObservation(question=self._task["question"], task=self._task, done=True, reward=reward)

    @property
    def state(self) -> State:
        return self._state


class ToyEnvironment(_ToyGame):
    """The toy game with a Task API: tasks addressed by (split, index)."""

    def _check(self, split: str) -> None:
        if split not in PER_LEVEL:
            raise ValueError(f"unknown split {split!r}")

    def list_splits(self) -> list[dict[str, Any]]:
        return [{"name": s, "type": s} for s in PER_LEVEL]

    def num_tasks(self, split: str) -> int:
        self._check(split)
        return PER_LEVEL[split] * len(self.levels)

    def get_task(self, split: str, index: int) -> dict[str, Any]:
        n = self.num_tasks(split)
        if not 0 <= index < n:
            raise IndexError(index)
        level = self.levels[index // PER_LEVEL[split]]
        digit = (index * 7 + (3 if split == "test" else 0)) % 10
        return {"id": f"toy/{split}/{index}", "split": split, "index": index, **toy_task(level, digit)}

    def list_tasks(self, split: str) -> list[dict[str, Any]]:
        return [self.get_task(split, i) for i in range(self.num_tasks(split))]

    def get_task_range(self, split: str, start: Optional[int] = None, stop: Optional[int] = None) -> list[dict[str, Any]]:
        return self.list_tasks(split)[start:stop]

    def reset(self, seed: Optional[int] = None, episode_id: Optional[str] = None, split: str = "train",
              index: int = 0, **kwargs: Any) -> ToyObservation:
        return self._start(self.get_task(split, index), episode_id)


class PlainToyEnvironment(_ToyGame):
    """The toy game without a Task API (a task list drives it): reset(level=, seed=) plays that level."""

    def reset(self, seed: Optional[int] = None, episode_id: Optional[str] = None, level: int = 0,
              **kwargs: Any) -> ToyObservation:
        return self._start(toy_task(level, (seed or 0) % 10), episode_id)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--levels", default="0")
    parser.add_argument("--max-sessions", type=int, default=256)
    parser.add_argument("--no-task-api", action="store_true", help="serve the game without a Task API (for task lists)")
    args = parser.parse_args()
    import socket

    import uvicorn

    levels = tuple(int(x) for x in args.levels.split(","))
    game = PlainToyEnvironment if args.no_task_api else ToyEnvironment
    app = create_app(functools.partial(game, levels), ToyAction, ToyObservation, env_name="toy",
                     max_concurrent_envs=args.max_sessions)
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(2048)
    print(f"listening on http://127.0.0.1:{sock.getsockname()[1]}", flush=True)
    config = uvicorn.Config(app, log_level="warning", access_log=False, ws="websockets", timeout_graceful_shutdown=2)
    uvicorn.Server(config).run(sockets=[sock])
    return 0


if __name__ == "__main__":
    sys.exit(main())
