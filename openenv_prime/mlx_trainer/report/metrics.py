"""What one training step logs: rewards, timings, and the sampler's metrics capped to the most-drawn keys.

A sampler reports 8 metrics per key; with thousands of keys that would be hundreds of KB per log line, so a
step line keeps the totals and the per-key metrics of the ``log_keys`` keys drawn most so far, under the
flat names ``key/<key>/<name>`` that the plots read.
"""

from __future__ import annotations

from typing import Any

from openenv_prime.samplers import flat_key_metrics


def sampler_log_metrics(sampler: Any, max_keys: int) -> dict[str, float]:
    """Totals, ``keys_total``/``keys_logged``, and ``key/<key>/<name>`` for the ``max_keys`` most-drawn keys."""
    per_key = sampler.key_metrics(top=max_keys)
    out = sampler.metrics(per_key=False)
    out["keys_total"] = float(len(sampler.pool.keys))
    out["keys_logged"] = float(len(per_key))
    out.update(flat_key_metrics(per_key))
    return out


def mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else 0.0


def rollout_summary(rollouts: list[Any]) -> dict[str, Any]:
    """Episode counts and rewards of one step; rollouts without a reward are counted, not averaged in."""
    scored = [r for r in rollouts if r.reward is not None]
    by_family: dict[str, list[float]] = {}
    for r in scored:
        by_family.setdefault(r.task.key, []).append(r.reward)
    return {
        "reward": mean([r.reward for r in scored]),
        "family_reward": {k: mean(v) for k, v in sorted(by_family.items())},
        "unscored_episodes": len(rollouts) - len(scored),
        "errored_episodes": sum(r.error is not None for r in rollouts),
        "turns": mean([r.turns for r in rollouts]),
        "env_steps": mean([r.steps for r in rollouts]),
        "invalid_actions": sum(r.invalid_actions for r in rollouts),
        "episodes_done": sum(r.done for r in rollouts),
    }
