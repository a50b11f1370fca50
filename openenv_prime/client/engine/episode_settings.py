"""The episode rules as config keys: declared once, with the same names, defaults and checks in eval, the verifiers
taskset and the MLX trainer.

``EvalConfig`` and the MLX trainer's ``environment`` section inherit :class:`EpisodeSettings` (all seven keys) and hand
``config.rules()`` to the episode engine. The verifiers taskset splits them as its CLI always has: the limits are
``--env.taskset.*`` keys (:class:`EpisodeLimits`), the reward rule is ``--env.taskset.task.*`` keys
(:class:`RewardSettings`), and :func:`episode_rules` joins the two. The defaults and why are in
:mod:`openenv_prime.client.engine.episode_rules`; bad values fail when the config is read, naming the key.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import BaseModel, Field, field_validator

from openenv_prime.client.engine.episode_rules import DEFAULT_RULES, EpisodeRules
from openenv_prime.client.engine.rewards import check_clip

_RESERVED = ("split", "index", "episode_id")
"""Reset arguments every episode sets itself: its task's (split and index, or a task list line's) and its id."""


class EpisodeLimits(BaseModel):
    """When an episode stops: its step limit, its invalid-reply limit and the keys that flag an action invalid."""

    max_steps: int = Field(
        DEFAULT_RULES.max_steps, ge=1,
        description="Environment steps per episode before it is cut off (scored on what it earned; eval reports it as truncated).")
    max_invalid_actions: int = Field(
        DEFAULT_RULES.max_invalid_actions, ge=0,
        description="Invalid replies fed back to the model; the next one ends the episode.")
    invalid_flags: list[str] = Field(
        default_factory=lambda: list(DEFAULT_RULES.invalid_flags),
        description="Observation or metadata keys that, set to true, mark a step's action invalid; an episode the "
        "environment ends that way stops as an invalid action.")
    invalid_flags_in_state: bool = Field(
        DEFAULT_RULES.invalid_flags_in_state,
        description="Also look for the invalid flags in the environment's state() when it ends an episode (textarena "
        "keeps its flag there; one more message per episode).")
    invalid_errors: bool = Field(
        DEFAULT_RULES.invalid_errors,
        description="Count a step whose observation reports that the action failed as an invalid action: a non-empty "
        "'error' or 'exception' string, or a non-zero 'exit_code' with a Python traceback or SyntaxError in 'stderr'.")


class RewardSettings(BaseModel):
    """How the scored steps' rewards become the episode's reward (steps without a reward are left out)."""

    reward_mode: Literal["sum", "last", "max"] = Field(
        DEFAULT_RULES.reward_mode, description="Aggregate the scored steps' rewards by their sum, the last one, or the max.")
    reward_clip: tuple[float, float] | None = Field(
        DEFAULT_RULES.reward_clip,
        description="Clip the episode's reward into [low, high]; prime-rl's difficulty pools assume [0, 1]. None = no clip.")

    @field_validator("reward_clip")
    @classmethod
    def _ordered(cls, clip: tuple[float, float] | None) -> tuple[float, float] | None:
        return check_clip(clip)


class EpisodeSettings(EpisodeLimits, RewardSettings):
    """All seven episode-rule keys; :meth:`rules` is what the episode engine plays by."""

    def rules(self) -> EpisodeRules:
        """The episode rules these settings give."""
        return episode_rules(self, self)

    def episode_fields(self) -> dict:
        """The seven settings as keyword arguments for another config that carries them (a trainer's eval)."""
        return {name: getattr(self, name) for name in EpisodeSettings.model_fields}


def episode_rules(limits: EpisodeLimits, scoring: RewardSettings) -> EpisodeRules:
    """The episode rules of ``limits`` with ``scoring``'s reward rule (the one place settings become rules)."""
    return EpisodeRules(
        max_steps=limits.max_steps, max_invalid_actions=limits.max_invalid_actions, reward_mode=scoring.reward_mode,
        reward_clip=scoring.reward_clip, invalid_flags=tuple(limits.invalid_flags),
        invalid_flags_in_state=limits.invalid_flags_in_state, invalid_errors=limits.invalid_errors,
    )


class ResetArguments(BaseModel):
    """Extra reset arguments for every episode; the ones each episode sets itself are refused when the config is read."""

    reset_choices: ClassVar[str] = "choose tasks by split and put per-task reset arguments in a task list"
    """What a user who set a reserved argument should do instead, in the consumer's own keys or flags."""

    reset_kwargs: dict[str, Any] = Field(
        default_factory=dict, description="Extra arguments for every reset, besides the task's own (split and index, "
        "or a task list line's reset) and episode_id.")

    @field_validator("reset_kwargs")
    @classmethod
    def _leave_the_task_alone(cls, kwargs: dict[str, Any]) -> dict[str, Any]:
        reserved = sorted(set(_RESERVED) & set(kwargs))
        if reserved:
            raise ValueError(
                f"reset_kwargs may not set {reserved}: each episode resets with its task's split and index (or its "
                f"task list line's reset) and its own episode_id; {cls.reset_choices}"
            )
        return kwargs
