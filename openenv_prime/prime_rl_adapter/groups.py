"""One finalized prime-rl group (a list of `vf.Episode`) as the rewards and costs of one `update`.

Rewards come only from clean trainable traces: an errored rollout says nothing about how hard the
task is. Costs count every trainable trace, errored ones too, because they consumed compute."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal


@dataclass(frozen=True, slots=True)
class GroupReport:
    """What a group tells the sampler. `rewards` is empty when no trainable trace finished cleanly."""

    rewards: list[float]
    costs: list[float]
    errored_rollouts: int
    """Trainable traces with an error, plus episodes that failed before producing any trace."""
    lost_cost: float
    """Tokens of errored traces in a group without clean ones: no update can carry them."""


def trace_tokens(trace: Any, cost: str) -> int:
    """Tokens of every model call of the trace, read from the calls' usage: prompt + completion
    ("total_tokens", what the inference server processed) or completion only ("output_tokens").

    Read directly because verifiers' `num_total_tokens` rebuilds the message graph's branches on
    every access (about 150 us a trace), which would dominate `observe`."""
    tokens = 0
    for call in trace.calls:
        usage = call.usage
        if usage is not None:
            tokens += usage.completion_tokens
            if cost == "total_tokens":
                tokens += usage.prompt_tokens + (usage.cached_input_tokens or 0)
    return tokens


def read_group(
    group: Sequence[Any],
    *,
    success_threshold: float | None = None,
    cost: Literal["total_tokens", "output_tokens"] = "total_tokens",
) -> GroupReport:
    """Rewards of clean traces (binarized at `success_threshold` if set), one cost per reward.

    The errored traces' tokens are shared equally among the clean ones, so the costs the sampler
    sees add up to everything the group spent. One pass: this runs on the orchestrator's event loop."""
    rewards: list[float] = []
    costs: list[float] = []
    errored_rollouts = 0
    errored_cost = 0.0
    for episode in group:
        if not episode.traces and not episode.ok:
            errored_rollouts += 1
        for trace in episode.traces:
            if not trace.agent.trainable:
                continue
            if trace.has_error:
                errored_rollouts += 1
                errored_cost += trace_tokens(trace, cost)
            else:
                rewards.append(float(trace.reward))
                costs.append(float(trace_tokens(trace, cost)))
    if not rewards:
        return GroupReport([], [], errored_rollouts, errored_cost)
    if success_threshold is not None:
        rewards = [1.0 if reward >= success_threshold else 0.0 for reward in rewards]
    if errored_cost:
        share = errored_cost / len(rewards)
        costs = [value + share for value in costs]
    return GroupReport(rewards, costs, errored_rollouts, 0.0)
