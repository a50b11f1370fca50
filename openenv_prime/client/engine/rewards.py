"""An episode's reward from the environment's per-step rewards: one rule for the eval, the verifiers taskset and the
trainer (the episode engine, :mod:`openenv_prime.client.engine.episode`, applies it).

A step that returns no reward (``None``) is left out, never counted as 0.0: on a multi-step environment
that pays only at the end, zeros for the intermediate steps would turn every group into "no signal".
An episode the environment ended without scoring any step has no reward at all and stays out of its group.
"""

from __future__ import annotations

from typing import Sequence


def aggregate(rewards: Sequence[float], mode: str) -> float:
    """``sum``, ``last`` or ``max`` of the scored steps' rewards (0.0 for none, as the taskset's ``aggregate``)."""
    if not rewards:
        return 0.0
    if mode == "last":
        return rewards[-1]
    if mode == "max":
        return max(rewards)
    if mode == "sum":
        return sum(rewards)
    raise ValueError(f"reward_mode {mode!r} is not one of 'sum', 'last', 'max'")


def episode_reward(
    step_rewards: Sequence[float | None], ended_by_env: bool, mode: str, clip: tuple[float, float] | None
) -> float | None:
    """The episode's reward, or None when the environment ended it (``done``) without scoring any step.

    An episode the client cut off (``max_steps``, too many invalid actions), or the environment ended for an invalid
    action (pass ``ended_by_env=False`` then), is scored on what it earned, 0.0 when nothing: the model failed it.
    """
    scored = [float(r) for r in step_rewards if r is not None]
    if not scored and ended_by_env:
        return None
    return clipped(aggregate(scored, mode), clip)


def clipped(value: float, clip: tuple[float, float] | None) -> float:
    """``value`` clipped into ``[low, high]`` (unchanged for None)."""
    return value if clip is None else min(max(value, clip[0]), clip[1])


def check_clip(clip: tuple[float, float] | None) -> tuple[float, float] | None:
    """A config's ``reward_clip`` as given, or ValueError when its bounds are the wrong way round."""
    if clip is not None and clip[0] > clip[1]:
        raise ValueError(f"reward_clip {list(clip)} has low > high; write [low, high]")
    return clip
