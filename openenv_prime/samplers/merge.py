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
from typing import Any, Callable, Iterator, Sequence

from openenv_prime.samplers.curriculum import _EVIDENCE, HISTORY_COLUMNS, evidence_column
from openenv_prime.samplers.lineage import extended, history_digest, parse_lineage
from openenv_prime.samplers.pooled import FLOAT_STATS, INT_STATS, _without_seed
from openenv_prime.samplers.rngstate import rng_from_json, rng_to_json
from openenv_prime.samplers.sparse import expand
from openenv_prime.samplers.statecheck import SAMPLER_STATE_VERSION, parse_amount, parse_count, parse_list, section

_DECAYED = ("successes", "failures", "spread", "flat", "expected")  # s <- gamma*s + x on each update of the key
_SUMMED = ("predicted_sum",)  # plain sums
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
    if _UNMERGEABLE:
        raise ValueError(f"merge_state_dicts does not know how to combine curriculum fields {_UNMERGEABLE}")
    if not states:
        raise ValueError("merge_state_dicts needs at least one state")
    for i, state in enumerate(states):
        _check_same_run(state, states[0], f"states[{i}]")
    if base is not None:
        _check_same_run(base, states[0], "base")
    k = int(states[0]["pool"]["num_keys"])
    parsed = [_parse(state, k, f"states[{i}]") for i, state in enumerate(states)]
    start = _parse(base, k, "base") if base is not None else None
    # One worker that loaded base without reseeding has no fork to record: its state is the merge.
    alone = len(parsed) == 1 and start is not None and start["digest"] not in parsed[0]["lineage"]
    if not alone:
        _check_lineage(parsed, start)
    start_columns = start["columns"] if start is not None else _fresh(k)
    gamma = float(states[0]["config"]["gamma"])
    order = _by_digest(parsed)
    ranked = [parsed[i]["columns"] for i in order]

    merged = copy.deepcopy(states[order[0]])
    out = {name: [] for name in HISTORY_COLUMNS}
    for j in range(k):
        n0 = start_columns["updates"][j]
        added = [p["updates"][j] - n0 for p in ranked]
        for i, (p, n) in enumerate(zip(ranked, added)):
            for name in (*INT_STATS, "updates"):
                if p[name][j] < start_columns[name][j]:
                    raise ValueError(
                        f"states[{order[i]}] has fewer {name} of key {j} than base: "
                        f"pass as base the state those workers started from"
                    )
        for name in (*INT_STATS, "updates"):
            out[name].append(start_columns[name][j] + sum(p[name][j] - start_columns[name][j] for p in ranked))
        for name in ("cost", *_SUMMED):
            out[name].append(math.fsum([start_columns[name][j]] + [p[name][j] - start_columns[name][j] for p in ranked]))
        scale = _rescaling(added, gamma)
        for name in _DECAYED:
            values = [p[name][j] for p in ranked]
            where = lambda i, name=name, j=j: f"states[{order[i]}] holds less curriculum.{name} for key {j}"  # noqa: E731
            out[name].append(_merged_decayed(start_columns[name][j], values, added, scale, gamma, where))
    for name in (*INT_STATS, *FLOAT_STATS):
        merged["stats"][name] = out[name]
    for name in ("updates", *_EVIDENCE):
        merged["curriculum"][name] = out[name]
    if alone:  # the checks above found it grew from base
        return copy.deepcopy(states[0])
    if "task_evidence" in merged:
        start_tasks = start["tasks"] if start is not None else {}
        merged["task_evidence"] = _merged_tasks(start_tasks, [parsed[i]["tasks"] for i in order], order, gamma)
    merged["lineage"] = extended(start["lineage"], start["digest"]) if start is not None else []
    return merged


def _merged_decayed(b: float, values: list[float], added: list[int], scale: list[float], gamma: float,
                    where: Callable[[int], str]) -> float:
    """One decayed sum (s <- gamma*s + x per update) of the reference interleaving: the base's value ``b``
    decayed by every update since, plus each worker's own part (its value less the base decayed by its
    ``added`` updates) rescaled by ``scale``. ``where(i)`` names worker i's value in the error."""
    parts = [gamma ** sum(added) * b]
    for i, (value, n, c) in enumerate(zip(values, added, scale)):
        own = value - gamma**n * b
        if own < -_SLACK * (1.0 + b):
            raise ValueError(
                f"{where(i)} than base decayed by its {n} updates: it did not grow from this base; pass the "
                f"state those workers started from"
            )
        parts.append(c * max(own, 0.0))
    return math.fsum(parts)


def _merged_tasks(start: dict[int, list], workers: list[dict[int, list]], order: list[int], gamma: float) -> list[list]:
    """The per-task evidence (taskevidence.py) merged as the keys' is, task by task: a task a worker did
    not report holds the base's entry there."""
    out = []
    for position in sorted(set(start).union(*workers)):
        n0, s0, f0 = start.get(position, (0, 0.0, 0.0))
        entries = [w.get(position, (n0, s0, f0)) for w in workers]
        added = [entry[0] - n0 for entry in entries]
        for i, n in zip(order, added):
            if n < 0:
                raise ValueError(
                    f"states[{i}] has fewer updates of task {position} than base: pass as base the state those "
                    f"workers started from"
                )
        scale = _rescaling(added, gamma)
        merged = [n0 + sum(added)]
        for column, b in ((1, s0), (2, f0)):
            where = lambda i, position=position: f"states[{order[i]}] holds less task_evidence for task {position}"  # noqa: E731
            merged.append(_merged_decayed(b, [entry[column] for entry in entries], added, scale, gamma, where))
        out.append([position, *merged])
    return out


def canonical_order(states: Sequence[dict[str, Any]]) -> list[int]:
    """Positions of ``states`` sorted by their history digest: the order ties are broken in."""
    k = int(states[0]["pool"]["num_keys"])
    return _by_digest([_parse(state, k, f"states[{i}]") for i, state in enumerate(states)])


def _by_digest(parsed: list[dict[str, Any]]) -> list[int]:
    return sorted(range(len(parsed)), key=lambda i: parsed[i]["digest"])


def interleaving(counts: Sequence[int]) -> list[int]:
    """The reference order of one key's groups, oldest first: for each group, the index of its worker
    (worker i delivered counts[i] groups; its k-th at (k - 1/2)/counts[i]; ties by index)."""
    return list(reversed(list(_newest_first(counts))))


def _newest_first(counts: Sequence[int]) -> Iterator[int]:
    heap = [(-(2 * n - 1) / (2 * n), -i, n) for i, n in enumerate(counts) if n > 0]
    heapq.heapify(heap)
    while heap:
        _, negative_i, k = heapq.heappop(heap)
        yield -negative_i
        if k > 1:
            n = counts[-negative_i]
            heapq.heappush(heap, (-(2 * k - 3) / (2 * n), negative_i, k - 1))


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


def _check_lineage(parsed: list[dict[str, Any]], start: dict[str, Any] | None) -> None:
    """Every state grew from ``start`` (or from the prior), and no two share history after it."""
    loaded_by: dict[str, int] = {}
    seen: dict[str, int] = {}
    for i, p in enumerate(parsed):
        if p["digest"] in seen:
            raise ValueError(
                f"states[{seen[p['digest']]}] and states[{i}] are the same state (statistics and RNG): "
                f"one worker's state passed twice, or two workers that share a seed; give each worker its own seed"
            )
        seen[p["digest"]] = i
        lineage = p["lineage"]
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


def _parse(state: dict[str, Any], k: int, what: str) -> dict[str, Any]:
    """The per-key columns (as a loading sampler parses them), the per-task evidence, the lineage and the
    history digest."""
    try:
        stats, learned = section(state, "stats"), section(state, "curriculum")
        columns = {name: parse_list(stats.get(name), f"stats.{name}", k, int) for name in INT_STATS}
        for name in FLOAT_STATS:
            columns[name] = parse_list(stats.get(name), f"stats.{name}", k, float)
        columns["updates"] = parse_list(learned.get("updates"), "curriculum.updates", k, int)
        for name in _EVIDENCE:
            columns[name] = evidence_column(learned, name, k)
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


def _fresh(k: int) -> dict[str, list]:
    return {name: [0] * k if name in (*INT_STATS, "updates") else [0.0] * k for name in HISTORY_COLUMNS}
