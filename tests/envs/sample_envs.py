"""OpenEnv environments written the way other people write them (no Task API), for the wrapper's tests.

Imported by servers in subprocesses (``tests.envs.sample_envs:CLASS``, repository root on PYTHONPATH),
under openenv 0.4.1 and 0.10.0, so only openenv's public base classes are used."""

from __future__ import annotations

from typing import Any, Optional
from uuid import uuid4

from fastmcp import FastMCP
from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.mcp_environment import MCPEnvironment
from openenv.core.env_server.types import Action, Observation, State
from pydantic import Field


class GuessAction(Action):
    guess: int = Field(description="the guessed number")


class GuessObservation(Observation):
    target_hint: str = ""
    seed: Optional[int] = None
    level: Optional[int] = None


class GuessEnvironment(Environment[GuessAction, GuessObservation, State]):
    """Guess a number fixed by `reset(seed, level)`: target = seed * 7 + level (mod 100)."""

    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self, offset: int = 0):
        super().__init__()
        self.offset = offset
        self._state = State(episode_id=str(uuid4()), step_count=0)
        self._target: int | None = None
        self._seed: int | None = None
        self._level: int | None = None

    def reset(self, seed: Optional[int] = None, episode_id: Optional[str] = None, level: int = 0) -> GuessObservation:
        self._seed, self._level = seed, level
        self._target = ((seed or 0) * 7 + level + self.offset) % 100
        self._state = State(episode_id=episode_id or str(uuid4()), step_count=0)
        return GuessObservation(target_hint=f"a number below 100 (level {level})", seed=seed, level=level)

    def step(self, action: GuessAction, timeout_s: Optional[float] = None, **kwargs: Any) -> GuessObservation:
        self._state.step_count += 1
        correct = action.guess == self._target
        return GuessObservation(seed=self._seed, level=self._level, done=True, reward=1.0 if correct else 0.0)

    @property
    def state(self) -> State:
        return self._state


class NoArgsEnvironment(GuessEnvironment):
    """A `reset` that takes nothing, as grid_world's does: a seeds source must be refused for it."""

    SUPPORTS_CONCURRENT_SESSIONS = False

    def reset(self) -> GuessObservation:  # type: ignore[override]
        return super().reset(seed=0)


class SecretToolsEnvironment(MCPEnvironment):
    """MCP style, like OpenEnv's echo_env: tools `echo(message)` and `secret()`; the reset data sits in metadata."""

    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self):
        mcp = FastMCP("secret_tools")
        self._secret: int | None = None

        @mcp.tool
        def echo(message: str) -> str:
            """Echo the message back."""
            return message

        @mcp.tool
        def secret() -> int:
            """The number this episode was reset with."""
            return self._secret

        super().__init__(mcp)
        self._state = State(episode_id=str(uuid4()), step_count=0)

    def reset(self, seed: Optional[int] = None, episode_id: Optional[str] = None, **kwargs: Any) -> Observation:
        self._secret = (seed or 0) + int(kwargs.get("bonus", 0))
        self._state = State(episode_id=episode_id or str(uuid4()), step_count=0)
        return Observation(done=False, reward=0.0, metadata={"status": "ready", "reset_kwargs": {"seed": seed, **kwargs}})

    def _step_impl(self, action: Action, timeout_s: Optional[float] = None, **kwargs: Any) -> Observation:
        return Observation(done=False, reward=0.0, metadata={"error": f"unknown action {type(action).__name__}"})

    @property
    def state(self) -> State:
        return self._state


def guess_tasks() -> list[dict[str, Any]]:
    """A task list for GuessEnvironment, as a callable returns it (the JSONL line format)."""
    return [
        {"split": split, "id": f"{split}-{i}", "tier": i % 2, "reset": {"seed": 10 * i + (split == "test"), "level": i % 2}}
        for split in ("train", "test")
        for i in range(4)
    ]


def secret_tasks() -> list[dict[str, Any]]:
    """A task list for SecretToolsEnvironment: `bonus` reaches its reset through **kwargs."""
    return [{"split": "test", "id": f"s{i}", "tier": i, "reset": {"seed": 100 + i, "bonus": i}} for i in range(3)]



class AsyncGuessEnvironment(GuessEnvironment):
    """Overrides `reset_async`, so openenv calls that (not `reset`) for each episode."""

    async def reset_async(self, seed: Optional[int] = None, episode_id: Optional[str] = None, level: int = 0) -> GuessObservation:
        observation = self.reset(seed=seed, episode_id=episode_id, level=level)
        observation.target_hint = "async"
        return observation


class _Market:
    """A stand-in for the Python class finrl_env's constructor takes (no JSON can carry it)."""

    offset = 3


class ConfiguredEnvironment(GuessEnvironment):
    """A constructor that needs Python objects, as finrl_env's `FinRLEnvironment(finrl_env_class, finrl_env_config)`
    does: `serve MODULE:CLASS` cannot build it, a function can."""

    def __init__(self, market_cls: type, config: dict):
        super().__init__(offset=market_cls.offset + config["shift"])


def configured_environment(shift: int = 0) -> ConfiguredEnvironment:
    """The function `serve tests.envs.sample_envs:configured_environment` calls for each environment."""
    return ConfiguredEnvironment(_Market, {"shift": shift, "frame": object()})


def not_an_environment() -> int:
    return 7
