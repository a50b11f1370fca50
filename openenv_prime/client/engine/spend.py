"""Costs the environment reports: ``metadata["service_spend"]`` on each step (OpenEnv issue #1382), summed over an
episode, as the cost a sampler is told instead of the generated tokens.

The RFC lets costs come from the trainer (the generated tokens, which every trainer here counts) or from a spend the
environment reports with each episode (its open question 6): a judge model's bill, a paid API's calls, a simulator's
seconds. ``cost="spend"`` (TRL's ``OpenEnvTRLConfig``, the MLX trainer's ``[sampler] cost``, the prime-rl adapter's
``kwargs.cost``) takes it. A group is costless (``costs=None``) when any of its scored episodes reported no spend, and
a sampler takes costs with every group or with none, so an environment that reports spend on some episodes only is
refused at the first group that differs, by :func:`update`, in words that name the spend.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from openenv_prime.samplers.validation import CostsMismatchError

SPEND_FIELD = "service_spend"
"""The key of a step's metadata that holds what the step cost the environment."""

CostSource = Literal["tokens", "spend"]
"""Where a rollout's cost comes from: the tokens the model generated, or the environment's reported spend."""


def step_spend(metadata: Mapping[str, Any]) -> float | None:
    """The spend one step reports: a finite number >= 0, else None (none reported, or a value that is no spend)."""
    value = metadata.get(SPEND_FIELD)
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        return None
    value = float(value)
    return value if math.isfinite(value) and value >= 0 else None


def episode_spend(step_spends: Sequence[float | None]) -> float | None:
    """An episode's spend: the sum over the steps that reported one; None when none did."""
    reported = [spend for spend in step_spends if spend is not None]
    return math.fsum(reported) if reported else None


def group_costs(costs: Sequence[float | None]) -> list[float] | None:
    """One cost per scored episode, or None (the group is costless) when any of them has none."""
    return None if any(cost is None for cost in costs) else [float(cost) for cost in costs]


def update(sampler: Any, task: Any, rewards: Sequence[float], costs: Sequence[float] | None, *,
           source: CostSource, setting: str) -> None:
    """``sampler.update(task, rewards, costs)``; with ``source="spend"``, a sampler's refusal of a group whose costs
    differ from the earlier groups' says which episodes reported spend and what to do. ``setting``: where the run
    chose ``cost="spend"`` (named in the message)."""
    try:
        sampler.update(task, rewards, costs)
    except CostsMismatchError as error:
        if source != "spend":
            raise
        now, before = ("reported", "did not") if costs is not None else ("did not all report", "did")
        raise CostsMismatchError(
            f"{setting}: the scored episodes of this group {now} metadata[{SPEND_FIELD!r}], and the earlier groups' "
            f"{before}; a group is costless when any of its scored episodes reported no spend, and a sampler takes "
            f"costs with every group or with none ({error}). Have the environment report {SPEND_FIELD!r} in the "
            f"metadata of every step (0.0 for a free one), or leave the cost at its default, the generated tokens") from error
