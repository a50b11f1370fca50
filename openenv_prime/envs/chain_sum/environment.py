"""The chain_sum OpenEnv environment: one question per episode, answered in one step.

`reset(split=..., index=...)` starts the episode on one task of the Task API; `reset(seed=...[,
tier=...])` picks one by seed. `step({"answer": str})` scores the reply (see `scoring`) and ends the
episode. The episode is `one_question`'s; this module adds chain_sum's wire classes, its `tier` filter
and its scoring. Each WebSocket session gets its own instance; instances share only read-only datasets,
so concurrent sessions are safe.
"""

from __future__ import annotations

from typing import Any, Optional

from openenv.core.env_server.types import Action, EnvironmentMetadata, Observation, State
from pydantic import Field

from openenv_prime import __version__
from openenv_prime.envs.chain_sum.scoring import score_reply
from openenv_prime.envs.chain_sum.taskset import ENV_NAME, ChainSumTaskset
from openenv_prime.envs.one_question import OneQuestionEnvironment


class ChainSumAction(Action):
    answer: str = Field(description="The model's reply; its final number is taken as the answer")


class ChainSumObservation(Observation):
    question: str = Field(default="", description="The arithmetic problem")
    task: dict[str, Any] = Field(default_factory=dict, description="The task spec (id, split, index, tier, ...)")
    correct_answer: Optional[str] = Field(default=None, description="The oracle answer, revealed after the step")
    score: Optional[float] = Field(default=None, description="reasoning-gym's raw (partial-credit) score of the reply")
    correct: Optional[bool] = Field(default=None, description="Whether the reply's final number is exactly right")
    extracted_answer: Optional[str] = Field(default=None, description="The final number found in the reply")


class ChainSumState(State):
    split: Optional[str] = None
    index: Optional[int] = None
    tier: Optional[int] = None
    task_id: Optional[str] = None
    done: bool = False


class ChainSumEnvironment(OneQuestionEnvironment):
    """reasoning-gym chain_sum in difficulty tiers, with the OpenEnv Task API."""

    FILTERS = ("tier",)
    INDEX_AND_FILTER = "pass either index or {field} to reset, not both: the index already fixes the {field}"
    observation_cls = ChainSumObservation
    state_cls = ChainSumState

    def __init__(self, num_tiers: int = 5, schedule: str = "lockstep"):
        super().__init__(ChainSumTaskset(num_tiers, schedule))

    def reset(self, seed: Optional[int] = None, episode_id: Optional[str] = None, split: Optional[str] = None,
              index: Optional[int] = None, tier: Optional[int] = None, **kwargs: Any) -> ChainSumObservation:
        """Start an episode on (split, index), or on a task picked by seed (within the filters given)."""
        return super().reset(seed, episode_id, split, index, tier=tier, **kwargs)

    def score(self, reply: str, spec: dict[str, Any], entry: dict[str, Any]) -> tuple[float, float, str | None]:
        return score_reply(reply, entry)

    def get_metadata(self) -> EnvironmentMetadata:
        shapes = ", ".join(f"{t.num_terms}x{t.num_digits}" for t in self.taskset.tiers)
        return EnvironmentMetadata(
            name=ENV_NAME,
            description=(
                f"reasoning-gym chain_sum in {len(self.taskset.tiers)} {self.taskset.schedule} tiers "
                f"(terms x digits: {shapes}); reset(split, index) or reset(seed[, tier]); "
                'step({"answer": str}) gives 1.0 when the final number is exact, else 0.0'
            ),
            version=__version__,
        )
