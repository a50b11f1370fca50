"""One question per episode, answered in one step: the episode of both reasoning-gym tiers servers (chain-sum, reasoning-gym).

Each of those servers is a task set plus a scoring rule; what an episode does between the two is the same
for both and lives here once, so they cannot drift apart in how they reset, refuse or end an episode.
`reset(split=..., index=...)` plays one task of the Task API; `reset(seed=...)` picks one by seed, within
the subclass's filter fields (`FILTERS`, e.g. `tier`) when given, through the task set's `pick_index`.
An unknown reset argument, or an index together with a filter, is refused with a TaskRequestError naming
the field, and leaves the episode as it was. `step` scores the reply with the subclass's `score` and ends
the episode. Over stateless HTTP `/step` (a fresh instance per request) top-level `split` and `index` name
the task to answer. The state holds `task_id` and every spec field its class declares.
"""

from __future__ import annotations

import random
from abc import abstractmethod
from typing import Any, Optional

from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.types import Action, Observation, State

from openenv_prime.envs.errors import TaskRequestError
from openenv_prime.envs.taskspecs import TaskAPIFromTaskset


class OneQuestionEnvironment(TaskAPIFromTaskset, Environment):
    """An episode of one task from `taskset`, scored by `score`; instances share only read-only caches."""

    SUPPORTS_CONCURRENT_SESSIONS = True
    FILTERS: tuple[str, ...] = ()
    """Reset arguments that narrow the pick by seed; the task set's `pick_index` takes them as keywords."""
    INDEX_AND_FILTER = "pass either index or {field} to reset, not both: the index already fixes it"
    """The refusal of an index together with filter `{field}` (a subclass may word it for its one filter)."""
    action_cls: type[Action]
    observation_cls: type[Observation]
    state_cls: type[State]

    def __init__(self, taskset: Any):
        super().__init__()
        self.taskset = taskset
        self._state = self.state_cls()
        self._entry: dict[str, Any] | None = None
        self._spec: dict[str, Any] | None = None

    @abstractmethod
    def score(self, reply: str, spec: dict[str, Any], entry: dict[str, Any]) -> tuple[float, float, str | None]:
        """(reward in {0.0, 1.0}, reasoning-gym's raw score of the reply, the answer read from it or None)."""

    def reset(
        self,
        seed: Optional[int] = None,
        episode_id: Optional[str] = None,
        split: Optional[str] = None,
        index: Optional[int] = None,
        **kwargs: Any,
    ) -> Observation:
        """Start an episode on (split, index), or on a task picked by seed (within the filters given).

        With neither index nor seed a random task of the split is picked. `split` defaults to train.
        """
        unknown = sorted(set(kwargs) - set(self.FILTERS))
        if unknown:
            accepted = ("seed", "episode_id", "split", "index", *self.FILTERS)
            raise TaskRequestError(unknown[0], f"unknown reset argument(s) {unknown}; reset accepts {', '.join(accepted)}")
        filters = {name: kwargs.get(name) for name in self.FILTERS}
        split = "train" if split is None else split
        if index is not None:
            given = [name for name, value in filters.items() if value is not None]
            if given:
                raise TaskRequestError(given[0], self.INDEX_AND_FILTER.format(field=given[0]))
            spec = self.taskset.get_task(split, index)
        else:
            chosen = random.randrange(2**63) if seed is None else seed
            spec = self.taskset.get_task(split, self.taskset.pick_index(chosen, split, **filters))
        entry = self.taskset.entry(split, spec["index"])
        self._spec, self._entry = spec, entry
        fields = {name: spec[name] for name in self.state_cls.model_fields if name in spec}
        self._state = self.state_cls(episode_id=episode_id, step_count=0, task_id=spec["id"], **fields)
        return self.observation_cls(question=entry["question"], task=spec, done=False, reward=None)

    def step(self, action: Action, timeout_s: Optional[float] = None, **kwargs: Any) -> Observation:
        """Score the answer and end the episode.

        Over stateless HTTP `/step`, top-level `split` and `index` name the task to answer.
        """
        if kwargs.get("index") is not None:
            self.reset(split=kwargs.get("split"), index=kwargs["index"], episode_id=self._state.episode_id)
        if self._entry is None or self._spec is None:
            raise RuntimeError("no task loaded: call reset(split=..., index=...) before step")
        if self._state.done:
            raise RuntimeError(f"episode on {self._spec['id']} is already finished: call reset to start a new one")
        reward, raw_score, extracted = self.score(action.answer, self._spec, self._entry)
        self._state.step_count += 1
        self._state.done = True
        return self.observation_cls(
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
    def state(self) -> State:
        return self._state
