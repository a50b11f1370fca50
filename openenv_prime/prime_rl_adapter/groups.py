"""One finalized prime-rl group (a list of `vf.Episode`) as the rewards and costs of one `update`.

Rewards come from exactly the traces prime-rl trains on (`iter_trainable_traces` in prime-rl's
`orchestrator/algo/base.py`): no error, a trainable agent, and at least one masked (sampled) token.
An errored rollout says nothing about how hard the task is. A reward that is NaN, infinite or
missing (no reward entries at all) is left out and counted: one bad reward function must not stop
the run, nor teach the sampler a 0 it never measured. Costs count every trainable trace, errored
ones too, because they consumed compute. With `cost = "spend"` a trace's cost is what the environment
reported the episode cost it (`trace.info["openenv"]["service_spend"]`, which the openenv-prime taskset
records), and the group is costless (`costs=None`) when a rewarded trace has none."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from openenv_prime.client.engine.spend import SPEND_FIELD, step_spend


@dataclass(frozen=True, slots=True)
class GroupReport:
    """What a group tells the sampler. `rewards` is empty when no trace gave a usable reward."""

    rewards: list[float]
    costs: list[float] | None
    """One per reward; None when `cost = "spend"` and a rewarded trace reported no spend (a costless group)."""
    errored_rollouts: int
    """Trainable traces with an error, plus episodes that failed before producing any trace."""
    lost_cost: float
    """Cost (tokens, or spend) of traces in a group without a usable reward: no update can carry them."""
    nonfinite_rewards: int = 0
    """Trained-on traces whose reward was NaN or infinite (left out)."""
    missing_rewards: int = 0
    """Trained-on traces with no reward entry at all (left out, not read as 0)."""
    unsampled_traces: int = 0
    """Clean trainable traces with a finite reward but no sampled token: prime-rl does not train on them either."""


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


def trace_spend(trace: Any) -> float | None:
    """What the environment reported the trace's episode cost it, as the openenv-prime taskset records it; None
    when it reported nothing (or the trace was not played by that taskset)."""
    record = trace.info.get("openenv") if isinstance(trace.info, dict) else None
    value = record.get("service_spend") if isinstance(record, dict) else None
    return step_spend({SPEND_FIELD: value})


def trace_cost(trace: Any, cost: str) -> float | None:
    """The trace's cost in the unit `cost` names; None only for a spend not reported."""
    return trace_spend(trace) if cost == "spend" else float(trace_tokens(trace, cost))


def has_sampled_tokens(trace: Any) -> bool:
    """prime-rl's filter: a trace trains only if some node has a masked (sampled) token."""
    return any(any(node.mask) for node in trace.nodes)


def trace_reward(trace: Any) -> float | None:
    """The trace's reward as prime-rl computes it (`Trace.reward`), or None when it has no
    reward entry (prime-rl would read that as 0.0)."""
    if not any(reward is not None for reward in trace.rewards.values()):
        return None
    return float(trace.reward)


def read_group(
    group: Sequence[Any],
    *,
    success_threshold: float | None = None,
    cost: Literal["total_tokens", "output_tokens", "spend"] = "output_tokens",
) -> GroupReport:
    """Rewards of the traces prime-rl trains on (binarized at `success_threshold` if set), one cost
    per reward (None for all of them when a rewarded trace reported no spend).

    The other trainable traces' costs are shared equally among the rewarded ones, so the costs the
    sampler sees add up to everything the group spent. One pass: this runs on the orchestrator's
    event loop."""
    rewards: list[float] = []
    costs: list[float | None] = []
    errored_rollouts = nonfinite = missing = unsampled = 0
    unrewarded_cost = 0.0
    for episode in group:
        if not episode.traces and not episode.ok:
            errored_rollouts += 1
        for trace in episode.traces:
            if not trace.agent.trainable:
                continue
            spent = trace_cost(trace, cost)
            counted = spent or 0.0  # what it adds to a shared or lost cost (an unreported spend adds nothing)
            if trace.has_error:
                errored_rollouts += 1
                unrewarded_cost += counted
                continue
            reward = trace_reward(trace)
            if reward is None or not math.isfinite(reward):  # a broken reward is counted, sampled tokens or not
                if reward is None:
                    missing += 1
                else:
                    nonfinite += 1
                unrewarded_cost += counted
                continue
            if not has_sampled_tokens(trace):
                unsampled += 1
                unrewarded_cost += counted
                continue
            rewards.append(reward)
            costs.append(spent)
    if not rewards:
        return GroupReport([], [], errored_rollouts, unrewarded_cost, nonfinite, missing, unsampled)
    if success_threshold is not None:
        rewards = [1.0 if reward >= success_threshold else 0.0 for reward in rewards]
    if any(value is None for value in costs):  # a rewarded trace without spend: the group is costless
        return GroupReport(rewards, None, errored_rollouts, 0.0, nonfinite, missing, unsampled)
    share = unrewarded_cost / len(rewards)
    return GroupReport(rewards, [value + share for value in costs], errored_rollouts, 0.0, nonfinite, missing, unsampled)
