"""What one training step logs: rewards, timings, and the sampler's metrics capped to the most-drawn keys.

A sampler reports 8 metrics per key; with thousands of keys that would be hundreds of KB per log line, so a
step line keeps the totals and the per-key metrics of the ``log_keys`` keys drawn most so far.
"""

from __future__ import annotations

from typing import Any


def cap_key_metrics(metrics: dict[str, float], max_keys: int) -> dict[str, float]:
    """Totals, ``keys_total``/``keys_logged``, and ``key/<key>/<name>`` for the ``max_keys`` most-drawn keys."""
    per_key: dict[str, dict[str, float]] = {}
    out: dict[str, float] = {}
    for name, value in metrics.items():
        if name.startswith("key/"):
            key, _, metric = name[len("key/"):].rpartition("/")
            per_key.setdefault(key, {})[metric] = value
        else:
            out[name] = value
    ranked = sorted(per_key, key=lambda k: (-per_key[k].get("draw_share", 0.0), k))[:max_keys]
    out["keys_total"] = float(len(per_key))
    out["keys_logged"] = float(len(ranked))
    for key in ranked:
        for metric, value in per_key[key].items():
            out[f"key/{key}/{metric}"] = value
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
        "turns": mean([r.turns for r in rollouts]),
        "env_steps": mean([r.steps for r in rollouts]),
        "invalid_actions": sum(r.invalid_actions for r in rollouts),
        "episodes_done": sum(r.done for r in rollouts),
    }
