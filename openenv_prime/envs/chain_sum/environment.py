"""The chain_sum OpenEnv environment: one question per episode, answered in one step.

`reset(split=..., index=...)` starts the episode on one task of the Task API; `reset(seed=...[,
tier=...])` picks one by seed. `step({"answer": str})` scores the reply (see `scoring`) and ends the
episode. Each WebSocket session gets its own instance; instances share only read-only datasets, so
concurrent sessions are safe.
"""

from __future__ import annotations

import random
from typing import Any, Optional

from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.types import Action, EnvironmentMetadata, Observation, State
from pydantic import Field

from openenv_prime import __version__
from openenv_prime.envs.taskspecs import TaskAPIFromTaskset
from openenv_prime.envs.chain_sum.scoring import score_reply
from openenv_prime.envs.chain_sum.taskset import ENV_NAME, ChainSumTaskset, TaskRequestError

_RESET_ARGS = ("seed", "episode_id", "split", "index", "tier")


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


class ChainSumEnvironment(TaskAPIFromTaskset, Environment):
    """reasoning-gym chain_sum in difficulty tiers, with the OpenEnv Task API."""

    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self, num_tiers: int = 5, schedule: str = "lockstep"):
        super().__init__()
        self.taskset = ChainSumTaskset(num_tiers, schedule)
        self._state = ChainSumState()
        self._entry: dict[str, Any] | None = None
        self._spec: dict[str, Any] | None = None

    # -- Episode --------------------------------------------------------------------------------

    def reset(
        self,
        seed: Optional[int] = None,
        episode_id: Optional[str] = None,
        split: Optional[str] = None,
        index: Optional[int] = None,
        tier: Optional[int] = None,
        **kwargs: Any,
    ) -> ChainSumObservation:
        """Start an episode on (split, index), or on a task picked by seed (within `tier` if given).

        With neither index nor seed a random task of the split is picked. `split` defaults to train.
        """
        if kwargs:
            message = f"unknown reset argument(s) {sorted(kwargs)}; reset accepts {', '.join(_RESET_ARGS)}"
            raise TaskRequestError(sorted(kwargs)[0], message)
        split = "train" if split is None else split
        if index is not None:
            if tier is not None:
                raise TaskRequestError("tier", "pass either index or tier to reset, not both: the index already fixes the tier")
            spec = self.taskset.get_task(split, index)
        else:
            chosen_seed = random.randrange(2**63) if seed is None else seed
            spec = self.taskset.get_task(split, self.taskset.pick_index(chosen_seed, split, tier))
        entry = self.taskset.entry(split, spec["index"])
        self._spec, self._entry = spec, entry
        self._state = ChainSumState(
            episode_id=episode_id, step_count=0, split=split, index=spec["index"], tier=spec["tier"], task_id=spec["id"]
        )
        return ChainSumObservation(question=entry["question"], task=spec, done=False, reward=None)

    def step(self, action: ChainSumAction, timeout_s: Optional[float] = None, **kwargs: Any) -> ChainSumObservation:
        """Score the answer and end the episode.

        Over stateless HTTP `/step`, top-level `split` and `index` name the task to answer.
        """
        if kwargs.get("index") is not None:
            self.reset(split=kwargs.get("split"), index=kwargs["index"], episode_id=self._state.episode_id)
        if self._entry is None or self._spec is None:
            raise RuntimeError("no task loaded: call reset(split=..., index=...) before step")
        if self._state.done:
            raise RuntimeError(f"episode on {self._spec['id']} is already finished: call reset to start a new one")
        reward, raw_score, extracted = score_reply(action.answer, self._entry)
        self._state.step_count += 1
        self._state.done = True
        return ChainSumObservation(
            question=self._entry["question"],
            task=self._spec,
            correct_answer=self._entry["answer"],
            score=raw_score,
            correct=reward == 1.0,
            extracted_answer=extracted,
            done=True,
            reward=reward,
        )

    @property
    def state(self) -> ChainSumState:
        return self._state

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
