"""Environments whose randomness the reset check must tell apart, served with the Task API the way users serve theirs.

Run as ``python reset_check_server.py PORT`` (openenv 0.4.1 or 0.10.0): each KIND below is its class wrapped by
``create_app_with_tasks`` (what ``openenv-prime serve MODULE:CLASS --tasks`` serves) at ``http://127.0.0.1:PORT/KIND``.
Their randomness is a per-process counter, not an RNG, so "two fresh sessions differ" holds on every run.

- ``constructor-rng``: the RNG is made with a fixed seed in the constructor (as wildfire and snake do), so a
  second reset in one session plays another board and every fresh session the same one; ``reset(level)`` picks
  the task. Tasks: ``{"level": 0..2}``.
- ``hidden-seed``: ``reset(seed)`` takes the seed and ignores it (as TextArena does); the secret it draws is in
  the state, not in the observation. Tasks: ``{"seed": 1..4}`` (their specs name the seed too).
- ``shown-seed``: the same, but the observation shows what was drawn; ``reset(seed, level)``. Tasks: ``{"seed": 1..4}``.
"""

from __future__ import annotations

import random
import sys
from typing import Any, Optional

from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.types import Action, Observation, State

from openenv_prime.envs.taskapi.app import create_app_with_tasks

KINDS = ("constructor-rng", "hidden-seed", "shown-seed")
_DRAWN = {"count": 0}  # per process: what the seed-ignoring environments "draw" next


class PickAction(Action):
    value: int


class BoardObservation(Observation):
    prompt: str = ""
    board: list[int] = []
    level: int = 0


class SecretState(State):
    secret: int = 0


class _Game(Environment[PickAction, BoardObservation, SecretState]):
    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self) -> None:
        super().__init__()
        self._state = SecretState()

    def step(self, action: PickAction, timeout_s: Optional[float] = None, **kwargs: Any) -> BoardObservation:
        self._state.step_count += 1
        return BoardObservation(prompt="Done.", done=True, reward=float(action.value == self._state.secret))

    @property
    def state(self) -> SecretState:
        return self._state


class ConstructorRngEnvironment(_Game):
    def __init__(self) -> None:
        super().__init__()
        self.rng = random.Random(3407)

    def reset(self, seed: Optional[int] = None, episode_id: Optional[str] = None, level: int = 0) -> BoardObservation:
        board = [self.rng.randrange(5) for _ in range(6)]
        self._state = SecretState(episode_id=episode_id, step_count=0, secret=board[0])
        return BoardObservation(prompt=f"Level {level}: pick the first cell.", board=board, level=level)


def _draw() -> int:
    _DRAWN["count"] += 1
    return 100 + _DRAWN["count"]


class HiddenSeedEnvironment(_Game):
    def reset(self, seed: Optional[int] = None, episode_id: Optional[str] = None) -> BoardObservation:
        self._state = SecretState(episode_id=episode_id, step_count=0, secret=_draw())  # the seed is never used
        return BoardObservation(prompt="Guess my number between 1 and 1000.")


class ShownSeedEnvironment(_Game):
    def reset(self, seed: Optional[int] = None, episode_id: Optional[str] = None, level: int = 0) -> BoardObservation:
        secret = _draw()
        self._state = SecretState(episode_id=episode_id, step_count=0, secret=secret)
        return BoardObservation(prompt="Pick the largest cell.", board=[1, 2, secret, 3], level=level)


def tasks(kind: str) -> list[dict[str, Any]]:
    if kind == "constructor-rng":
        return [{"split": "test", "id": f"level-{n}", "level": n, "reset": {"level": n}} for n in range(3)]
    return [{"split": "test", "id": f"seed-{s}", "level": s % 2, "seed": s, "reset": {"seed": s}} for s in range(1, 5)]


CLASSES = dict(zip(KINDS, (ConstructorRngEnvironment, HiddenSeedEnvironment, ShownSeedEnvironment)))


if __name__ == "__main__":
    import uvicorn
    from starlette.applications import Starlette
    from starlette.routing import Mount

    apps = [Mount(f"/{kind}", create_app_with_tasks(cls, lambda kind=kind: tasks(kind), env_name=kind.replace("-", "_")))
            for kind, cls in CLASSES.items()]
    uvicorn.run(Starlette(routes=apps), host="127.0.0.1", port=int(sys.argv[1]), log_level="warning")
