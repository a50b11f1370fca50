"""Checks on what callers pass in, done before any state changes so a rejected call leaves no trace."""

from __future__ import annotations

import math
import numbers
from typing import Sequence


def check_count(n: object) -> int:
    if type(n) is int and n >= 0:  # the common case, without the slower ABC check
        return n
    if isinstance(n, bool) or not isinstance(n, numbers.Integral) or n < 0:
        raise ValueError(f"sample(n) needs an int n >= 0, got {n!r}")
    return int(n)


class CostsMismatchError(ValueError):
    """A group with costs after groups without (or the other way round): a sampler takes costs with every group or
    with none. Its own class, so that a trainer can say where its costs come from (``cost="spend"``)."""


_PLAIN = frozenset((float, int))


def _finite_numbers(values: object, what: str) -> tuple[float, ...]:
    if type(values) is not list and type(values) is not tuple:
        if isinstance(values, (str, bytes)) or not hasattr(values, "__iter__"):
            raise TypeError(f"{what} must be a sequence of numbers, got {type(values).__name__}")
        values = tuple(values)
    if _PLAIN.issuperset(map(type, values)):  # the common case, checked at C speed
        out = tuple(map(float, values))
        if all(map(math.isfinite, out)):
            return out
    out = []
    for i, value in enumerate(values):
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            raise TypeError(f"{what}[{i}] is {value!r} ({type(value).__name__}); expected a number")
        value = float(value)
        if not math.isfinite(value):
            raise ValueError(f"{what}[{i}] is {value}; {what} must be finite (no NaN or inf)")
        out.append(value)
    return tuple(out)


def check_group(
    rewards: Sequence[float], costs: Sequence[float] | None
) -> tuple[tuple[float, ...], tuple[float, ...] | None]:
    """One scored group: non-empty finite rewards, and None or one finite cost >= 0 per reward."""
    rewards_t = _finite_numbers(rewards, "rewards")
    if not rewards_t:
        raise ValueError("rewards is empty: report one reward per rollout of the group")
    if costs is None:
        return rewards_t, None
    costs_t = _finite_numbers(costs, "costs")
    if len(costs_t) != len(rewards_t):
        raise ValueError(
            f"len(costs) = {len(costs_t)} but len(rewards) = {len(rewards_t)}: "
            f"pass one cost per rollout, or costs=None"
        )
    for i, cost in enumerate(costs_t):
        if cost < 0:
            raise ValueError(f"costs[{i}] is {cost}; costs must be >= 0")
    return rewards_t, costs_t


def has_spread(rewards: tuple[float, ...], tolerance: float) -> bool:
    """Whether a group's rewards differ by more than ``tolerance``: the group gives GRPO a gradient."""
    return max(rewards) - min(rewards) > tolerance
