"""The multi-dataset reasoning-gym OpenEnv environment: one question per episode, answered in one step.

`reset(split=..., index=...)` plays one task of the Task API; `reset(seed=...[, dataset=...][, tier=...])`
picks one by seed. `step({"answer": str})` scores the reply (see `scoring`) and ends the episode: reward
1.0 or 0.0, reasoning-gym's raw score in the observation. The episode is `one_question`'s; this module
adds the wire classes, the `dataset` and `tier` filters and the scoring. Instances share only read-only
caches, so concurrent sessions are safe.
"""

from __future__ import annotations

from typing import Any, Optional, Sequence

from openenv.core.env_server.types import Action, EnvironmentMetadata, Observation, State
from pydantic import Field

from openenv_prime import __version__
from openenv_prime.envs.one_question import OneQuestionEnvironment
from openenv_prime.envs.reasoning_gym_tiers.chain_sum import ChainSumTaskset
from openenv_prime.envs.reasoning_gym_tiers.scoring import score_final_number, score_reply
from openenv_prime.envs.reasoning_gym_tiers.layout import ReasoningGymTaskset


class ReasoningGymAction(Action):
    answer: str = Field(description="The model's reply to the question")


class ReasoningGymObservation(Observation):
    question: str = Field(default="", description="The reasoning-gym question")
    task: dict[str, Any] = Field(default_factory=dict, description="The task spec (id, split, index, family, dataset, tier, ...)")
    correct_answer: Optional[str] = Field(default=None, description="The oracle answer, revealed after the step")
    score: Optional[float] = Field(default=None, description="reasoning-gym's raw (partial-credit) score of the reply")
    correct: Optional[bool] = Field(default=None, description="Whether reasoning-gym scores a reading of the reply 1.0")
    extracted_answer: Optional[str] = Field(default=None, description="The reading of the reply that scored 1.0")


class ReasoningGymState(State):
    split: Optional[str] = None
    index: Optional[int] = None
    dataset: Optional[str] = None
    tier: Optional[int] = None
    family: Optional[str] = None
    task_id: Optional[str] = None
    done: bool = False


class ReasoningGymTiersEnvironment(OneQuestionEnvironment):
    """reasoning-gym datasets in curriculum tiers, with the OpenEnv Task API."""

    FILTERS = ("dataset", "tier")
    action_cls = ReasoningGymAction
    observation_cls = ReasoningGymObservation
    state_cls = ReasoningGymState

    def __init__(self, datasets: Sequence[str] = ("chain_sum",), num_tiers: int = 3, per_tier: dict[str, int] | None = None):
        super().__init__(ReasoningGymTaskset(datasets, num_tiers, per_tier))

    def reset(self, seed: Optional[int] = None, episode_id: Optional[str] = None, split: Optional[str] = None,
              index: Optional[int] = None, dataset: Optional[str] = None, tier: Optional[int] = None, **kwargs: Any) -> ReasoningGymObservation:
        """Start an episode on (split, index), or on a task picked by seed (within the filters given)."""
        return super().reset(seed, episode_id, split, index, dataset=dataset, tier=tier, **kwargs)

    def score(self, reply: str, spec: dict[str, Any], entry: dict[str, Any]) -> tuple[float, float, str | None]:
        return score_reply(spec["dataset"], reply, entry)

    def get_metadata(self) -> EnvironmentMetadata:
        return EnvironmentMetadata(
            name=self.taskset.ENV_NAME,
            description=(
                f"reasoning-gym datasets {', '.join(self.taskset.datasets)} in {self.taskset.num_tiers} curriculum tiers "
                f"(families: {', '.join(self.taskset.families)}); reset(split, index) or reset(seed[, dataset][, tier]); "
                'step({"answer": str}) gives 1.0 when reasoning-gym scores the reply 1.0, else 0.0'
            ),
            version=__version__,
        )


# -- the chain_sum case: chain_sum's own wire classes --------------------------------------------------------------


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
    """reasoning-gym chain_sum in difficulty tiers, with the OpenEnv Task API (see `chain_sum`)."""

    FILTERS = ("tier",)
    INDEX_AND_FILTER = "pass either index or {field} to reset, not both: the index already fixes the {field}"
    action_cls = ChainSumAction
    observation_cls = ChainSumObservation
    state_cls = ChainSumState

    def __init__(self, num_tiers: int = 5, schedule: str = "lockstep"):
        super().__init__(ChainSumTaskset(num_tiers, schedule))

    def reset(self, seed: Optional[int] = None, episode_id: Optional[str] = None, split: Optional[str] = None,
              index: Optional[int] = None, tier: Optional[int] = None, **kwargs: Any) -> ChainSumObservation:
        """Start an episode on (split, index), or on a task picked by seed (within the filters given)."""
        return super().reset(seed, episode_id, split, index, tier=tier, **kwargs)

    def score(self, reply: str, spec: dict[str, Any], entry: dict[str, Any]) -> tuple[float, float, str | None]:
        return score_final_number(self.taskset.datasets[0], reply, entry)

    def get_metadata(self) -> EnvironmentMetadata:
        shapes = ", ".join(f"{terms}x{digits}" for terms, digits in map(self.taskset.shape, range(self.taskset.num_tiers)))
        return EnvironmentMetadata(
            name=self.taskset.ENV_NAME,
            description=(
                f"reasoning-gym chain_sum in {self.taskset.num_tiers} {self.taskset.schedule} tiers "
                f"(terms x digits: {shapes}); reset(split, index) or reset(seed[, tier]); "
                'step({"answer": str}) gives 1.0 when the final number is exact, else 0.0'
            ),
            version=__version__,
        )
