"""Merge the curriculum states of workers that sampled one pool into the state one sampler would hold.

**What a merged state means.** Workers start from ``base`` (a shared state every worker loaded; by
default the fresh prior) and each adds groups of its own. The reference is one sampler that starts
from ``base`` and sees every worker's groups of a key *evenly interleaved*: worker i's k-th group
(of n_i since ``base``) at time (k - 1/2)/n_i, as workers running side by side deliver them (ties:
states in canonical order, ``canonical_order``). So the merge forgets at one sampler's rate: each
worker's groups decay by the updates of all workers after them, not only by its own. Merging the
states of W workers does not remember W times more than one sampler.

**How, and how close.** A worker's state holds only its decayed sums, not each group, so the merge
rescales each worker's own evidence (its counts less the decayed ``base``) by c_i = (weight of its
groups in the reference) / (weight under its own decay), both computed exactly from the update
counts; the ``base``'s evidence decays by gamma**(all updates since it), update counts add. Then:
- the decayed mass of each worker's groups (``spread + flat``; ``successes + failures`` when a key's
  groups have one size) and the prior's weight equal the reference's (to float rounding);
- where each worker's groups of a key all had the same outcome, the merged state is the reference's;
- in general p (and the variance share) differ from the reference's by at most the largest range of
  one worker's per-group success fractions on that key: the information a decayed sum lacks.
Draws, episodes, groups, costs and the sum of predicted signal add. Per-task evidence
(``taskevidence.py``) merges the same way task by task: each task's groups evenly interleaved over the
workers that reported it, a task a worker did not report holding the base's entry there. Sums use
``math.fsum`` and workers are taken in canonical order, so the result does not depend on the order of
``states``.

**Shared history is checked, not trusted** (``lineage.py``). A worker that loads a shared state must
``reseed`` (or all workers draw the same tasks), and reseeding records the digest of the state it
loaded. ``base`` must be among every worker's records, and no two workers may share a record after
``base``: so merging workers that started from one state without passing it as ``base`` (counting
it once per worker) is an error, as is a ``base`` they did not start from.

The merged RNG and per-key cycles are those of the first state in canonical order. Workers that load
the merged state must ``reseed`` with their own seed, or they all draw the same tasks.
"""

from __future__ import annotations

import heapq
import math
from typing import Any, Iterator, NamedTuple, Sequence

from openenv_prime.samplers.curriculum import _EVIDENCE, HISTORY_COLUMNS, evidence_column
from openenv_prime.samplers.lineage import extended, history_digest, parse_lineage
from openenv_prime.samplers.pooled import FLOAT_STATS, INT_STATS, _without_seed
from openenv_prime.samplers.rngstate import rng_from_json, rng_to_json
from openenv_prime.samplers.sparse import expand
from openenv_prime.samplers.statecheck import SAMPLER_STATE_VERSION, parse_amount, parse_count, parse_list, section

_COUNTED = (*INT_STATS, "updates")  # integer counts: the workers' increments add
_SUMMED = (*FLOAT_STATS, "predicted_sum")  # plain float sums: the workers' increments add
_DECAYED = ("successes", "failures", "spread", "flat", "expected")  # s <- gamma*s + x on each update of the key
_UNMERGEABLE = tuple(name for name in _EVIDENCE if name not in _DECAYED + _SUMMED)
# Own evidence below -_SLACK * (1 + base value) means the state did not grow from the base; above it, rounding.
_SLACK = 1e-9


def merge_state_dicts(states: Sequence[dict[str, Any]], base: dict[str, Any] | None = None) -> dict[str, Any]:
    """One CurriculumSampler state for the workers' ``states`` (see the module docstring).

    ``base``: the state every worker loaded before adding its own groups (e.g. the previous merge);
    None when they all started fresh.
    """
    import copy  # only merging needs it; keeps `import openenv_prime.samplers` light

    states = [expand(state) for state in states]  # compact states (sparse.py) merge as their dense form
    base = expand(base)
    _check_mergeable(states, base)
    num_keys = int(states[0]["pool"]["num_keys"])
    workers = [_parse(state, num_keys, f"states[{i}]") for i, state in enumerate(states)]
    start = _parse(base, num_keys, "base") if base is not None else None
    # One worker that loaded base without reseeding has no fork to record: its state is the merge.
    alone = len(workers) == 1 and start is not None and start["digest"] not in workers[0]["lineage"]
    if not alone:
        _check_lineage(workers, start)
    gamma = float(states[0]["config"]["gamma"])
    order = _by_digest(workers)
    start_columns = start["columns"] if start is not None else _fresh(num_keys)
    columns = _merged_columns(start_columns, [workers[i]["columns"] for i in order], order, gamma)
    if alone:  # merging it checked that it grew from base
        return copy.deepcopy(states[0])
    merged = copy.deepcopy(states[order[0]])
    for name in (*INT_STATS, *FLOAT_STATS):
        merged["stats"][name] = columns[name]
    for name in ("updates", *_EVIDENCE):
        merged["curriculum"][name] = columns[name]
    if "task_evidence" in merged:
        start_tasks = start["tasks"] if start is not None else {}
        merged["task_evidence"] = _merged_tasks(start_tasks, [workers[i]["tasks"] for i in order], order, gamma)
    merged["lineage"] = extended(start["lineage"], start["digest"]) if start is not None else []
    return merged


def _check_mergeable(states: list[dict[str, Any]], base: dict[str, Any] | None) -> None:
    """At least one state, all CurriculumSampler states of one pool and config, with columns this module knows."""
    if _UNMERGEABLE:
        raise ValueError(f"merge_state_dicts does not know how to combine curriculum fields {_UNMERGEABLE}")
    if not states:
        raise ValueError("merge_state_dicts needs at least one state")
    for i, state in enumerate(states):
        _check_same_run(state, states[0], f"states[{i}]")
    if base is not None:
        _check_same_run(base, states[0], "base")


class _Interleaved(NamedTuple):
    """The groups the workers added to one key (or task) since the base, as the reference interleaves them."""

    positions: list[int]  # each worker's index in ``states`` (workers in canonical order), to name it in errors
    added: list[int]  # each worker's updates of the key since the base
    scale: list[float]  # c_i of each worker's own evidence (_rescaling)
    gamma: float


def _interleaved(positions: list[int], added: list[int], gamma: float) -> _Interleaved:
    return _Interleaved(positions, added, _rescaling(added, gamma), gamma)


def _merged_columns(start: dict[str, list], workers: list[dict[str, list]], order: list[int],
                    gamma: float) -> dict[str, list]:
    """Every per-key column (HISTORY_COLUMNS) of the merge from the base's ``start`` and the ``workers``'
    columns (in canonical ``order``), key by key."""
    merged: dict[str, list] = {name: [] for name in HISTORY_COLUMNS}
    for key in range(len(start["updates"])):
        for name, value in _merged_key(key, start, workers, order, gamma).items():
            merged[name].append(value)
    return merged


def _merged_key(key: int, start: dict[str, list], workers: list[dict[str, list]], order: list[int],
                gamma: float) -> dict[str, float]:
    """One key's value in each column: counts and sums add the workers' increments, decayed sums are the
    reference's (``_merged_decayed``)."""
    for position, worker in zip(order, workers):
        for name in _COUNTED:
            if worker[name][key] < start[name][key]:
                raise ValueError(
                    f"states[{position}] has fewer {name} of key {key} than base: "
                    f"pass as base the state those workers started from"
                )
    values = {name: [worker[name][key] for worker in workers] for name in HISTORY_COLUMNS}
    merged: dict[str, float] = {}
    for name in _COUNTED:
        merged[name] = _merged_count(start[name][key], values[name])
    for name in _SUMMED:
        merged[name] = _merged_sum(start[name][key], values[name])
    groups = _interleaved(order, [updates - start["updates"][key] for updates in values["updates"]], gamma)
    for name in _DECAYED:
        merged[name] = _merged_decayed(start[name][key], values[name], groups, f"curriculum.{name} for key {key}")
    return merged


def _merged_count(base_value: int, values: list[int]) -> int:
    """The base's count plus each worker's increment over it."""
    return base_value + sum(value - base_value for value in values)


def _merged_sum(base_value: float, values: list[float]) -> float:
    """The base's sum plus each worker's increment over it, summed exactly (``math.fsum``)."""
    return math.fsum([base_value] + [value - base_value for value in values])


def _merged_decayed(base_value: float, values: list[float], groups: _Interleaved, what: str) -> float:
    """One decayed sum (s <- gamma*s + x per update) of the reference interleaving: ``base_value`` decayed by
    every update since, plus each worker's own part (its value less the base decayed by its own updates)
    rescaled by c_i. ``what`` names the field in the error for a worker holding less than the decayed base."""
    gamma = groups.gamma
    parts = [gamma ** sum(groups.added) * base_value]
    for position, value, added, scale in zip(groups.positions, values, groups.added, groups.scale):
        own = value - gamma**added * base_value
        if own < -_SLACK * (1.0 + base_value):
            raise ValueError(
                f"states[{position}] holds less {what} than base decayed by its {added} updates: it did not grow "
                f"from this base; pass the state those workers started from"
            )
        parts.append(scale * max(own, 0.0))
    return math.fsum(parts)


def _merged_tasks(start: dict[int, list], workers: list[dict[int, list]], order: list[int], gamma: float) -> list[list]:
    """The per-task evidence (taskevidence.py) merged as the keys' is, task by task."""
    return [_merged_task(position, start, workers, order, gamma) for position in sorted(set(start).union(*workers))]


def _merged_task(position: int, start: dict[int, list], workers: list[dict[int, list]], order: list[int],
                 gamma: float) -> list:
    """One ``[position, updates, successes, failures]`` entry; a worker that did not report the task holds
    the base's entry there."""
    base_updates, base_successes, base_failures = start.get(position, (0, 0.0, 0.0))
    entries = [worker.get(position, (base_updates, base_successes, base_failures)) for worker in workers]
    for worker_position, (updates, _, _) in zip(order, entries):
        if updates < base_updates:
            raise ValueError(
                f"states[{worker_position}] has fewer updates of task {position} than base: pass as base the state "
                f"those workers started from"
            )
    groups = _interleaved(order, [updates - base_updates for updates, _, _ in entries], gamma)
    what = f"task_evidence for task {position}"
    successes = _merged_decayed(base_successes, [entry[1] for entry in entries], groups, what)
    failures = _merged_decayed(base_failures, [entry[2] for entry in entries], groups, what)
    return [position, _merged_count(base_updates, [entry[0] for entry in entries]), successes, failures]


def canonical_order(states: Sequence[dict[str, Any]]) -> list[int]:
    """Positions of ``states`` sorted by their history digest: the order ties are broken in."""
    states = [expand(state) for state in states]  # as merge_state_dicts takes them
    num_keys = int(states[0]["pool"]["num_keys"])
    return _by_digest([_parse(state, num_keys, f"states[{i}]") for i, state in enumerate(states)])


def _by_digest(parsed: list[dict[str, Any]]) -> list[int]:
    return sorted(range(len(parsed)), key=lambda i: parsed[i]["digest"])


def interleaving(counts: Sequence[int]) -> list[int]:
    """The reference order of one key's groups, oldest first: for each group, the index of its worker
    (worker i delivered counts[i] groups; its k-th at (k - 1/2)/counts[i]; ties by index)."""
    return list(reversed(list(_newest_first(counts))))


def _newest_first(counts: Sequence[int]) -> Iterator[int]:
    """``interleaving`` newest first, lazily (``_rescaling`` stops once the weights are negligible): a heap of
    each worker's latest group not yet yielded, by time and index, both negated."""
    heap = [(-(2 * n - 1) / (2 * n), -worker, n) for worker, n in enumerate(counts) if n > 0]
    heapq.heapify(heap)
    while heap:
        _, negated_worker, group = heapq.heappop(heap)  # the worker's group-th group of counts[worker]
        yield -negated_worker
        if group > 1:
            n = counts[-negated_worker]
            heapq.heappush(heap, (-(2 * group - 3) / (2 * n), negated_worker, group - 1))


def _rescaling(added: list[int], gamma: float) -> list[float]:
    """c_i: the weight worker i's groups get in the reference over the weight under its own decay."""
    if gamma == 1.0 or sum(1 for n in added if n) <= 1:
        return [1.0] * len(added)
    reference = [0.0] * len(added)
    negligible = 1e-17 * (1.0 - gamma)  # weights below this add less than 1e-17 of the total, tail included
    for age, i in enumerate(_newest_first(added)):
        weight = gamma**age
        if weight < negligible:
            break
        reference[i] += weight
    return [r / ((1.0 - gamma**n) / (1.0 - gamma)) if n else 1.0 for r, n in zip(reference, added)]


def _check_lineage(workers: list[dict[str, Any]], start: dict[str, Any] | None) -> None:
    """Every state grew from ``start`` (or from the prior), and no two share history after it."""
    loaded_by: dict[str, int] = {}
    seen: dict[str, int] = {}
    for i, worker in enumerate(workers):
        if worker["digest"] in seen:
            raise ValueError(
                f"states[{seen[worker['digest']]}] and states[{i}] are the same state (statistics and RNG): "
                f"one worker's state passed twice, or two workers that share a seed; give each worker its own seed"
            )
        seen[worker["digest"]] = i
        lineage = worker["lineage"]
        if start is not None and start["digest"] in lineage:
            lineage = lineage[lineage.index(start["digest"]) + 1 :]
        elif start is not None and any(map(any, start["columns"].values())):  # a fresh base holds nothing to recount
            raise ValueError(
                f"states[{i}] does not descend from base by its record (lineage {lineage}, base {start['digest']}): "
                f"a worker records the state it started from only when it calls reseed(its_seed) after loading "
                f"it, so call reseed() in each worker after load_state_dict(base) (without it the workers also "
                f"draw the same tasks); otherwise pass as base the state the workers did load"
            )
        for digest in lineage:
            other = loaded_by.setdefault(digest, i)
            if other != i:
                raise ValueError(
                    f"states[{other}] and states[{i}] both continue from one shared state (digest {digest}), which "
                    f"would be counted once per worker: pass that state as base= (merge_state_dicts(states, base=shared))"
                )


def _check_same_run(state: Any, reference: dict[str, Any], what: str) -> None:
    if not isinstance(state, dict):
        raise TypeError(f"{what} is a {type(state).__name__}, not a state_dict() dict")
    if state.get("sampler") != "CurriculumSampler":
        raise ValueError(f"{what} was saved by {state.get('sampler')!r}; only CurriculumSampler states merge")
    if state.get("version") != SAMPLER_STATE_VERSION:
        raise ValueError(f"{what} has state version {state.get('version')!r}, expected {SAMPLER_STATE_VERSION}")
    pool = state.get("pool")
    if not isinstance(pool, dict) or pool.get("fingerprint") != reference["pool"].get("fingerprint"):
        raise ValueError(f"{what} was saved on a different task pool than states[0]; only states of one pool merge")
    config = state.get("config")
    if not isinstance(config, dict) or _without_seed(config) != _without_seed(reference.get("config") or {}):
        raise ValueError(f"{what} has config {config!r}, unlike states[0] {reference.get('config')!r}")


def _parse(state: dict[str, Any], num_keys: int, what: str) -> dict[str, Any]:
    """The per-key columns (as a loading sampler parses them), the per-task evidence, the lineage and the
    history digest."""
    try:
        stats, learned = section(state, "stats"), section(state, "curriculum")
        columns = {name: parse_list(stats.get(name), f"stats.{name}", num_keys, int) for name in INT_STATS}
        for name in FLOAT_STATS:
            columns[name] = parse_list(stats.get(name), f"stats.{name}", num_keys, float)
        columns["updates"] = parse_list(learned.get("updates"), "curriculum.updates", num_keys, int)
        for name in _EVIDENCE:
            columns[name] = evidence_column(learned, name, num_keys)
        tasks = _parse_tasks(state.get("task_evidence", []))
        rng = rng_to_json(rng_from_json(state.get("rng")))
        lineage = parse_lineage(state.get("lineage"))
    except ValueError as exc:
        raise ValueError(f"{what}: {exc}") from None
    columns = {name: columns[name] for name in HISTORY_COLUMNS}
    if tasks:  # as CurriculumSampler._digest covers it
        columns["task_evidence"] = [[position, *tasks[position]] for position in sorted(tasks)]
    return {"columns": columns, "tasks": tasks, "lineage": lineage, "digest": history_digest(columns, rng, lineage)}


def _parse_tasks(data: Any) -> dict[int, list]:
    """``task_evidence`` entries by position, each field checked as a loading sampler checks it (the pool's
    own checks run when the merged state is loaded)."""
    if not isinstance(data, list):
        raise ValueError(f"state_dict field task_evidence must be a list, got {type(data).__name__}")
    out: dict[int, list] = {}
    for n, entry in enumerate(data):
        name = f"task_evidence[{n}]"
        if not isinstance(entry, list) or len(entry) != 4:
            raise ValueError(f"state_dict field {name} must be [position, updates, successes, failures], got {entry!r}")
        position = parse_count(entry[0], name + "[0] (position)")
        if position in out:
            raise ValueError(f"state_dict field {name} repeats task {position}")
        out[position] = [parse_count(entry[1], name + "[1] (updates)"), parse_amount(entry[2], name + "[2] (successes)"),
                         parse_amount(entry[3], name + "[3] (failures)")]
    return out


def _fresh(num_keys: int) -> dict[str, list]:
    """The columns of a fresh sampler: what workers without a base started from."""
    return {name: [0] * num_keys if name in _COUNTED else [0.0] * num_keys for name in HISTORY_COLUMNS}
