"""The multi-dataset reasoning-gym OpenEnv environment: one question per episode, answered in one step.

`reset(split=..., index=...)` plays one task of the Task API; `reset(seed=...[, dataset=...][, tier=...])`
picks one by seed. `step({"answer": str})` scores the reply (see `scoring`) and ends the episode: reward
1.0 or 0.0, reasoning-gym's raw score in the observation. Instances share only read-only caches, so
concurrent sessions are safe.
"""

from __future__ import annotations

import random
from typing import Any, Optional, Sequence

from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.types import Action, EnvironmentMetadata, Observation, State
from pydantic import Field

from openenv_prime import __version__
from openenv_prime.envs.taskspecs import TaskAPIFromTaskset
from openenv_prime.envs.errors import TaskRequestError
from openenv_prime.envs.reasoning_gym_tiers.scoring import score_reply
from openenv_prime.envs.reasoning_gym_tiers.taskset import ENV_NAME, ReasoningGymTaskset

_RESET_ARGS = ("seed", "episode_id", "split", "index", "dataset", "tier")


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


class ReasoningGymTiersEnvironment(TaskAPIFromTaskset, Environment):
    """reasoning-gym datasets in curriculum tiers, with the OpenEnv Task API."""

    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self, datasets: Sequence[str] = ("chain_sum",), num_tiers: int = 3, per_tier: dict[str, int] | None = None):
        super().__init__()
        self.taskset = ReasoningGymTaskset(datasets, num_tiers, per_tier)
        self._state = ReasoningGymState()
        self._entry: dict[str, Any] | None = None
        self._spec: dict[str, Any] | None = None

    # -- Episode --------------------------------------------------------------------------------

    def reset(
        self,
        seed: Optional[int] = None,
        episode_id: Optional[str] = None,
        split: Optional[str] = None,
        index: Optional[int] = None,
        dataset: Optional[str] = None,
        tier: Optional[int] = None,
        **kwargs: Any,
    ) -> ReasoningGymObservation:
        """Start an episode on (split, index), or on a task picked by seed (within dataset/tier if given)."""
        if kwargs:
            message = f"unknown reset argument(s) {sorted(kwargs)}; reset accepts {', '.join(_RESET_ARGS)}"
            raise TaskRequestError(sorted(kwargs)[0], message)
        split = "train" if split is None else split
        if index is not None:
            if dataset is not None or tier is not None:
                field = "dataset" if dataset is not None else "tier"
                raise TaskRequestError(field, f"pass either index or {field} to reset, not both: the index already fixes it")
            spec = self.taskset.get_task(split, index)
        else:
            chosen = random.randrange(2**63) if seed is None else seed
            spec = self.taskset.get_task(split, self.taskset.pick_index(chosen, split, dataset, tier))
        entry = self.taskset.entry(split, spec["index"])
        self._spec, self._entry = spec, entry
        self._state = ReasoningGymState(
            episode_id=episode_id, step_count=0, split=split, index=spec["index"], dataset=spec["dataset"],
            tier=spec["tier"], family=spec["family"], task_id=spec["id"],
        )
        return ReasoningGymObservation(question=entry["question"], task=spec, done=False, reward=None)

    def step(self, action: ReasoningGymAction, timeout_s: Optional[float] = None, **kwargs: Any) -> ReasoningGymObservation:
        """Score the answer and end the episode. Over stateless HTTP `/step`, top-level `split` and `index` name the task."""
        if kwargs.get("index") is not None:
            self.reset(split=kwargs.get("split"), index=kwargs["index"], episode_id=self._state.episode_id)
        if self._entry is None or self._spec is None:
            raise RuntimeError("no task loaded: call reset(split=..., index=...) before step")
        if self._state.done:
            raise RuntimeError(f"episode on {self._spec['id']} is already finished: call reset to start a new one")
        reward, raw_score, extracted = score_reply(self._spec["dataset"], action.answer, self._entry)
        self._state.step_count += 1
        self._state.done = True
        return ReasoningGymObservation(
            question=self._entry["question"],
            task=self._spec,
            correct_answer=str(self._entry["answer"]),
            score=raw_score,
            correct=reward == 1.0,
            extracted_answer=extracted,
            done=True,
            reward=reward,
        )

    @property
    def state(self) -> ReasoningGymState:
        return self._state

    def get_metadata(self) -> EnvironmentMetadata:
        return EnvironmentMetadata(
            name=ENV_NAME,
            description=(
                f"reasoning-gym datasets {', '.join(self.taskset.datasets)} in {self.taskset.num_tiers} curriculum tiers "
                f"(families: {', '.join(self.taskset.families)}); reset(split, index) or reset(seed[, dataset][, tier]); "
                'step({"answer": str}) gives 1.0 when reasoning-gym scores the reply 1.0, else 0.0'
            ),
            version=__version__,
        )
