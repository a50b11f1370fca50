"""Merge curriculum statistics of several workers that sampled the same pool.

Each worker's evidence is what it added on top of ``base`` (by default the fresh Beta(1,1) prior).
Merged counts: the base's evidence decayed once per update the workers made, plus every worker's own
evidence; update counts, draws, episodes, groups and costs add. Sums use ``math.fsum`` (exactly
rounded), so the result does not depend on the order of ``states``; merging one state returns it.

The merged RNG and per-key cycles are those of one input state, chosen by content (not position).
Workers that load the merged state should call ``sampler.reseed(...)`` with their own seed so they do
not all draw the same tasks.
"""

from __future__ import annotations

import math
from typing import Any, Sequence

from openenv_prime.samplers.curriculum import _EVIDENCE
from openenv_prime.samplers.pooled import STATE_VERSION, _without_seed, parse_list

_INT_STATS = ("draws", "episodes", "groups", "groups_with_signal")


def merge_state_dicts(states: Sequence[dict[str, Any]], base: dict[str, Any] | None = None) -> dict[str, Any]:
    """One CurriculumSampler state holding the statistics of all ``states`` (see the module docstring).

    ``base``: the state every worker started from, when they started from a shared (e.g. earlier
    merged) state, so its evidence is counted once rather than once per worker.
    """
    import copy  # only merging needs it; keeps `import openenv_prime.samplers` light

    states = list(states)
    if not states:
        raise ValueError("merge_state_dicts needs at least one state")
    for i, state in enumerate(states):
        _check_same_run(state, states[0], f"states[{i}]")
    if base is not None:
        _check_same_run(base, states[0], "base")
    k = int(states[0]["pool"]["num_keys"])
    parsed = [_parse(state, k, f"states[{i}]") for i, state in enumerate(states)]
    start = _parse(base, k, "base") if base is not None else _fresh(k)
    gamma = float(states[0]["config"]["gamma"])

    for name in (*_INT_STATS, "updates"):
        for i, p in enumerate(parsed):
            if any(x < x0 for x, x0 in zip(p[name], start[name])):
                raise ValueError(
                    f"states[{i}] has fewer {name} than base: pass as base the state those workers started from"
                )

    merged = copy.deepcopy(min(states, key=_stream_of))
    stats, learned = merged["stats"], merged["curriculum"]
    for name in _INT_STATS:
        stats[name] = [start[name][j] + sum(p[name][j] - start[name][j] for p in parsed) for j in range(k)]
    for name in ("cost", "predicted_sum"):
        column = [math.fsum([start[name][j]] + [p[name][j] - start[name][j] for p in parsed]) for j in range(k)]
        (stats if name == "cost" else learned)[name] = column
    updates = []
    for j in range(k):
        added = [p["updates"][j] - start["updates"][j] for p in parsed]
        updates.append((start["updates"][j], added))
    learned["updates"] = [n0 + sum(added) for n0, added in updates]
    for name in ("successes", "failures", "spread", "flat"):
        column = []
        for j, (n0, added) in enumerate(updates):
            own = [p[name][j] - gamma ** d * start[name][j] for p, d in zip(parsed, added)]
            column.append(math.fsum([gamma ** sum(added) * start[name][j]] + own))
        learned[name] = column
    return merged


def _check_same_run(state: Any, reference: dict[str, Any], what: str) -> None:
    if not isinstance(state, dict):
        raise TypeError(f"{what} is a {type(state).__name__}, not a state_dict() dict")
    if state.get("sampler") != "CurriculumSampler":
        raise ValueError(f"{what} was saved by {state.get('sampler')!r}; only CurriculumSampler states merge")
    if state.get("version") != STATE_VERSION:
        raise ValueError(f"{what} has state version {state.get('version')!r}, expected {STATE_VERSION}")
    pool = state.get("pool")
    if not isinstance(pool, dict) or pool.get("fingerprint") != reference["pool"].get("fingerprint"):
        raise ValueError(f"{what} was saved on a different task pool than states[0]; only states of one pool merge")
    config = state.get("config")
    if not isinstance(config, dict) or _without_seed(config) != _without_seed(reference.get("config") or {}):
        raise ValueError(f"{what} has config {config!r}, unlike states[0] {reference.get('config')!r}")


def _parse(state: dict[str, Any], k: int, what: str) -> dict[str, list]:
    stats, learned = state.get("stats"), state.get("curriculum")
    if not isinstance(stats, dict) or not isinstance(learned, dict):
        raise ValueError(f"{what} lacks its stats or curriculum fields")
    out = {name: parse_list(stats.get(name), f"{what}.stats.{name}", k, int) for name in _INT_STATS}
    out["cost"] = parse_list(stats.get("cost"), f"{what}.stats.cost", k, float)
    out["updates"] = parse_list(learned.get("updates"), f"{what}.curriculum.updates", k, int)
    for name in _EVIDENCE:
        out[name] = parse_list(learned.get(name), f"{what}.curriculum.{name}", k, float)
    return out


def _fresh(k: int) -> dict[str, list]:
    out: dict[str, list] = {name: [0] * k for name in (*_INT_STATS, "updates")}
    for name in ("cost", *_EVIDENCE):
        out[name] = [0.0] * k
    return out


def _stream_of(state: dict[str, Any]) -> str:
    """A canonical text of a state's RNG and cycles, to pick one by content whatever the input order."""
    import json  # only merging needs it; keeps `import openenv_prime.samplers` light
    return json.dumps([state.get("rng"), state.get("cycles"), state.get("config")], sort_keys=True)
