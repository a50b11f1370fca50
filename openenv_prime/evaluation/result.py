"""What an eval found: one record per task, accuracy per family, in a fixed order so that runs compare."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from openenv_prime.evaluation.config import EvalConfig
from openenv_prime.evaluation.selection import family_sort_key


class TaskResult(BaseModel):
    """One episode: the task it ran, the model's last reply and what the environment paid for it.

    ``reward`` is the client's episode reward (:func:`openenv_prime.client.engine.rewards.episode_reward`, the trainer's
    rule): None when the environment ended the episode without scoring any step, and such an episode is left out
    of accuracy and mean reward, never counted as 0.0."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    key: str
    family: str
    split: str
    index: int
    reward: float | None
    success: bool
    reply: str
    steps: int
    done: bool
    truncated: bool = False
    """The step limit (``max_steps``) ended the episode before the environment did."""
    invalid_actions: int
    turns: int = 0
    """Replies the model gave in the episode (each a model call; invalid ones included)."""
    reply_chars: int = 0
    """Characters of those replies, all together (the eval sees text, not the policy's tokens)."""
    stop: str | None = None
    """Why the episode ended: ``done``, ``max_steps``, ``invalid_action`` (past ``max_invalid_actions``, or the
    environment ended it for an invalid action), ``too_large``, ``stopped``, or ``error`` (the environment failed a
    step: unscored, left out of accuracy; ``error`` says how)."""
    error: str | None = None
    """Why the episode failed without the environment scoring it (e.g. an action the server refused as too large)."""
    tokens: int | None = None
    """Tokens the model generated over the episode's replies, where the policy reports them (None: unknown)."""
    messages: list[dict[str, Any]] = Field([], exclude=True)
    """The conversation: the system message the model was sent (when any), then every user message (the
    observations, the feedback on invalid replies) and every reply, in order (a tool-mode eval's: the assistant
    messages with their ``tool_calls`` and the ``tool`` messages answering them, as TRL's tool loop keeps them). Kept in the episodes file
    (:mod:`~openenv_prime.evaluation.episodes`), not in the report; a long episode's prompts left out its oldest turns
    (``prompt_budget``), so a late reply may not have seen all of them."""
    step_rewards: list[float | None] = Field([], exclude=True)
    """The reward of each accepted step (None where the environment gave none), in the episodes file only."""


class FamilyScore(BaseModel):
    """Accuracy (share of the scored episodes that reached the success threshold) and mean reward of one family."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    family: str
    tasks: int
    solved: int
    accuracy: float
    mean_reward: float
    truncated: int = 0
    """Episodes the step limit cut off."""
    ended_invalid: int = 0
    """Episodes that ended on an invalid action (past ``max_invalid_actions``, or the environment ended them for one)."""
    unscored: int = 0
    """Episodes the environment ended without a reward: left out of ``accuracy`` and ``mean_reward``."""
    errored: int = 0
    """Episodes the environment failed (a step it could not run): left out of ``accuracy`` and ``mean_reward``."""
    invalid_actions: int = 0
    """Invalid actions over the family's episodes (replies fed back as invalid, errors answering an action included)."""

    @property
    def scored(self) -> int:
        """Episodes with a reward: ``accuracy`` and ``mean_reward`` are over these (meaningless when there are none)."""
        return self.tasks - self.unscored - self.errored


class EvalResult(BaseModel):
    """Results sorted by (family, index). ``reconnects`` (episodes replayed after the server dropped their socket)
    and ``elapsed_s`` describe the run, not the model, and may differ between otherwise identical runs."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    config: EvalConfig
    env_name: str
    split: str
    """The split played (``config.split``, or the test split the rule chose when it is None)."""
    family_field: str | None
    """The spec field that named the families (None: one family), by ``openenv_prime.client.tasks.families``' rule."""
    choices: list[str] = []
    """How the split and the families were chosen, when the config left them open (printed before the table)."""
    results: list[TaskResult]
    families: list[FamilyScore]
    accuracy: float
    mean_reward: float
    reconnects: int
    truncated: int = 0
    """Episodes the step limit cut off before the environment ended them (raise ``max_steps`` if many)."""
    ended_invalid: int = 0
    """Episodes that ended on an invalid action."""
    unscored: int = 0
    """Episodes the environment ended without a reward (left out of ``accuracy`` and ``mean_reward``)."""
    errored: int = 0
    """Episodes the environment failed, a step it could not run (left out of ``accuracy`` and ``mean_reward``)."""
    stopped: str | None = None
    """Why the eval stopped before playing every task (the environment failed episode after episode), or None."""
    warnings: list[str] = []
    """What the run noticed about the server (e.g. a reset that may ignore the task). Not raised as Python warnings:
    the caller shows them, once (`openenv-prime eval` prints each as `warning: ...`)."""
    elapsed_s: float

    def accuracy_by_family(self) -> dict[str, float]:
        return {score.family: score.accuracy for score in self.families}

    @property
    def episodes(self) -> int:
        """Episodes this eval played (one per task)."""
        return len(self.results)

    @property
    def scored(self) -> int:
        """Episodes with a reward: ``accuracy`` and ``mean_reward`` are over these (0.0 stands in when there are none;
        the report says n/a)."""
        return sum(r.reward is not None for r in self.results)

    @property
    def invalid_actions(self) -> int:
        """Invalid actions over all of this eval's episodes."""
        return sum(r.invalid_actions for r in self.results)

    @property
    def replies(self) -> int:
        """Model replies over all of this eval's episodes."""
        return sum(r.turns for r in self.results)

    @property
    def reply_chars(self) -> int:
        """Characters of the model's replies over all of this eval's episodes."""
        return sum(r.reply_chars for r in self.results)


def scored_result(config: EvalConfig, results: list[TaskResult], family_order: list[str], **about) -> EvalResult:
    """The eval's result from its episodes' results; ``about`` holds the fields that describe the run (env_name,
    split, family_field, choices, reconnects, warnings, elapsed_s)."""
    scored = [r for r in results if r.reward is not None]
    return EvalResult(
        config=config, results=results, families=score_families(results, family_order),
        accuracy=sum(r.success for r in scored) / len(scored) if scored else 0.0,
        mean_reward=sum(r.reward for r in scored) / len(scored) if scored else 0.0,
        truncated=sum(r.truncated for r in results), ended_invalid=sum(r.stop == "invalid_action" for r in results),
        errored=sum(r.stop == "error" for r in results),
        unscored=sum(r.reward is None and r.stop != "error" for r in results), **about,
    )


def combine(parts: list[EvalResult]) -> EvalResult:
    """One eval from the shards that played its tasks ``k::len(parts)`` (``run_eval_async(..., shard=(k, n))``):
    the results back in the order one process would have played them, (family, index), scored again; the run took
    as long as the slowest shard. A shard that stopped early holds only the episodes it finished, and the joined
    eval is stopped with its reason (the first such shard's, naming it)."""
    if len(parts) == 1:
        return parts[0]
    results = sorted((r for p in parts for r in p.results), key=lambda r: (family_sort_key(r.family), r.index))
    stops = [(k, p.stopped) for k, p in enumerate(parts) if p.stopped]
    first = parts[0]
    return scored_result(first.config, results, sorted({r.family for r in results}, key=family_sort_key),
                         env_name=first.env_name, split=first.split, family_field=first.family_field,
                         choices=first.choices, reconnects=sum(p.reconnects for p in parts),
                         warnings=list(dict.fromkeys(w for p in parts for w in p.warnings)),
                         stopped=f"process {stops[0][0]} of {len(parts)}: {stops[0][1]}" if stops else None,
                         elapsed_s=max(p.elapsed_s for p in parts))


def score_families(results: list[TaskResult], family_order: list[str]) -> list[FamilyScore]:
    """Per-family accuracy and mean reward over the scored episodes, in ``family_order``."""
    scores = []
    for family in family_order:
        mine = [r for r in results if r.family == family]
        if not mine:
            continue
        scored = [r for r in mine if r.reward is not None]
        solved = sum(r.success for r in scored)
        scores.append(FamilyScore(
            family=family, tasks=len(mine), solved=solved, accuracy=solved / len(scored) if scored else 0.0,
            mean_reward=sum(r.reward for r in scored) / len(scored) if scored else 0.0,
            truncated=sum(r.truncated for r in mine), ended_invalid=sum(r.stop == "invalid_action" for r in mine),
            unscored=sum(r.reward is None and r.stop != "error" for r in mine), errored=sum(r.stop == "error" for r in mine),
            invalid_actions=sum(r.invalid_actions for r in mine),
        ))
    return scores
