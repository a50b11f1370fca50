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
    usages = [call.usage for call in trace.calls if call.usage is not None]
    if cost == "output_tokens":
        return sum(usage.completion_tokens for usage in usages)
    return sum(usage.total_tokens for usage in usages)


def trainable_traces(group: Sequence[Any]) -> list[Any]:
    return [trace for episode in group for trace in episode.traces if trace.agent.trainable]


def read_group(
    group: Sequence[Any],
    *,
    success_threshold: float | None = None,
    cost: Literal["total_tokens", "output_tokens"] = "total_tokens",
) -> GroupReport:
    """Rewards of clean traces (binarized at `success_threshold` if set), one cost per reward.

    The errored traces' tokens are shared equally among the clean ones, so the costs the sampler
    sees add up to everything the group spent."""
    traces = trainable_traces(group)
    clean = [trace for trace in traces if not trace.has_error]
    errored = [trace for trace in traces if trace.has_error]
    errored_cost = float(sum(trace_tokens(trace, cost) for trace in errored))
    failed_episodes = sum(1 for episode in group if not episode.ok and not episode.traces)
    errored_rollouts = len(errored) + failed_episodes
    if not clean:
        return GroupReport([], [], errored_rollouts, errored_cost)
    rewards = [float(trace.reward) for trace in clean]
    if success_threshold is not None:
        rewards = [1.0 if reward >= success_threshold else 0.0 for reward in rewards]
    share = errored_cost / len(clean)
    costs = [float(trace_tokens(trace, cost)) + share for trace in clean]
    return GroupReport(rewards, costs, errored_rollouts, 0.0)
