"""Restoring the adapter from an orchestrator checkpoint when the run changed in between.

A long run is resumed with a grown or pruned taskset, or retuned settings (gamma, epsilon, ...).
Rather than refusing the checkpoint (prime-rl's only way out, `ckpt.skip_progress`, throws all
progress away), the per-family statistics are carried over by family name: families still present
keep theirs, new ones start from the prior, vanished ones are dropped, and settings take the new
values. The result is an ordinary inner-sampler state, which the inner sampler's own
`load_state_dict` validates whole. Everything here only reads the saved state and builds a new one,
so a rejected checkpoint leaves the running sampler untouched."""

from __future__ import annotations

import copy
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from openenv_prime.samplers.sparse import STORED_KEYS, expand

ADAPTER_STATE_VERSION = 3
"""3: sparse, only the families that hold something (`samplers.sparse`); 2: every family; 1: no family
names. Checkpoints of each version load; plans are made on the dense form of version 2."""
_DENSE = 2

# Sections of an inner state that are not per-family statistics: never carried by family. The
# shuffle cycles refer to task positions, which move when the pool changes, so they restart.
_NOT_BY_FAMILY = frozenset({"version", "sampler", "pool", "config", "rng", "cycles"})


@dataclass
class ResumePlan:
    """What loading a checkpoint will do; computed before anything is applied."""

    inner: dict[str, Any]
    queue: list[str]
    counts: dict[str, float]
    family_draws: list[int]
    pool_changed: bool = False
    saved_tasks: int = 0
    new_families: list[str] = field(default_factory=list)
    dropped_families: list[str] = field(default_factory=list)
    dropped_queue: int = 0
    settings_changed: dict[str, tuple[Any, Any]] = field(default_factory=dict)

    def describe(self, num_tasks: int) -> str | None:
        """One log line saying what changed since the checkpoint, or None when nothing did."""
        parts = []
        if self.pool_changed:
            parts.append(f"task pool changed ({self.saved_tasks} -> {num_tasks} tasks; shuffle cycles restart)")
        if self.new_families:
            parts.append(f"{len(self.new_families)} new famil{'y' if len(self.new_families) == 1 else 'ies'} start from the prior: {_shown(self.new_families)}")
        if self.dropped_families:
            parts.append(f"{len(self.dropped_families)} vanished famil{'y' if len(self.dropped_families) == 1 else 'ies'} dropped: {_shown(self.dropped_families)}")
        if self.dropped_queue:
            parts.append(f"{self.dropped_queue} queued draws of removed tasks dropped")
        if self.settings_changed:
            changes = ", ".join(f"{name} {old!r} -> {new!r}" for name, (old, new) in self.settings_changed.items())
            parts.append(f"settings changed, statistics kept: {changes}")
        return "; ".join(parts) if parts else None


def _shown(names: Sequence[str], limit: int = 8) -> str:
    return ", ".join(map(repr, names[:limit])) + (f", ... ({len(names) - limit} more)" if len(names) > limit else "")


def _fail(problem: str) -> None:
    raise ValueError(f"openenv_prime sampler checkpoint: {problem}")


def _check_envelope(state: Any, counters: Sequence[str]) -> None:
    """Types and shapes of the adapter's own fields; the inner state is checked by its sampler."""
    if not isinstance(state, dict):
        _fail(f"expected the dict from state_dict(), got {type(state).__name__}")
    if state.get("version") != _DENSE:
        _fail(f"version {state.get('version')!r} is not supported (this adapter reads versions 1 to {ADAPTER_STATE_VERSION})")
    if not isinstance(state.get("family_field"), (str, type(None))):
        _fail("family_field must be a string or None")
    num_tasks = state.get("num_tasks")
    if isinstance(num_tasks, bool) or not isinstance(num_tasks, int) or num_tasks < 1:
        _fail(f"num_tasks must be an int >= 1, got {num_tasks!r}")
    families = state.get("families")
    if not isinstance(families, list) or not all(isinstance(name, (str, type(None))) for name in families):
        _fail("families must be a list of family names")
    names = [name for name in families if name is not None]
    if len(set(names)) != len(names):
        _fail("families holds a name twice")
    draws = state.get("family_draws")
    if not isinstance(draws, list) or len(draws) != len(families) or not all(_count(value) for value in draws):
        _fail(f"family_draws must be a list of {len(families)} ints >= 0")
    queue = state.get("queue")
    if not isinstance(queue, list) or not all(isinstance(key, str) for key in queue):
        _fail("queue must be a list of task keys")
    counts = state.get("counts")
    if not isinstance(counts, dict):
        _fail("counts must be a dict")
    for name, value in counts.items():
        if name not in counters:
            _fail(f"counts holds an unknown counter {name!r} (known: {', '.join(counters)})")
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
            _fail(f"counts[{name!r}] = {value!r} is not a finite number >= 0")
    inner = state.get("inner")
    if not isinstance(inner, dict) or not isinstance(inner.get("pool"), dict):
        _fail("inner must be the inner sampler's state dict, with its pool")
    if inner["pool"].get("num_keys") != len(families):
        _fail(f"inner state has {inner['pool'].get('num_keys')!r} keys but families lists {len(families)}")


def _count(value: Any) -> bool:
    return not isinstance(value, bool) and isinstance(value, int) and value >= 0


def plan_resume(
    state: Any,
    *,
    template: dict[str, Any],
    families: Sequence[str],
    task_keys: Sequence[str],
    counters: Sequence[str],
) -> ResumePlan:
    """Check `state` whole and build what to load: `template` is the fresh inner sampler's state
    (this run's pool and settings), `families` this run's family names in inner-key order,
    `task_keys` this run's task keys in taskset order. Raises ValueError naming the problem."""
    if isinstance(state, dict) and state.get("version") == 1:
        state = _from_version_1(state, template, families)
    elif isinstance(state, dict) and state.get("version") == ADAPTER_STATE_VERSION:
        state = _dense(state)
    _check_envelope(state, counters)
    saved_inner = state["inner"]
    saved_families = state["families"]
    same_pool = saved_inner["pool"].get("fingerprint") == template["pool"]["fingerprint"]
    known_keys = set(task_keys)
    unknown_queue = [key for key in state["queue"] if key not in known_keys]
    if same_pool:
        if state["num_tasks"] != len(task_keys):
            _fail(
                f"num_tasks = {state['num_tasks']} but the saved pool is this run's pool of "
                f"{len(task_keys)} tasks; the checkpoint is inconsistent"
            )
        if unknown_queue:
            _fail(f"queue holds {len(unknown_queue)} keys of tasks this taskset lacks (e.g. {unknown_queue[0]!r}), yet the pool is unchanged")
    counts = {name: state["counts"].get(name, 0) for name in counters}
    plan = ResumePlan(
        inner={},
        queue=[key for key in state["queue"] if key in known_keys],
        counts=counts,
        family_draws=[],
        pool_changed=not same_pool,
        saved_tasks=state["num_tasks"],
        dropped_queue=len(unknown_queue),
        settings_changed=_changed(saved_inner.get("config"), template.get("config")),
    )
    same_sampler = saved_inner.get("sampler") == template.get("sampler")
    if saved_inner.get("sampler") != template.get("sampler"):
        plan.settings_changed["sampler"] = (saved_inner.get("sampler"), template.get("sampler"))
    if same_pool and same_sampler:
        plan.inner = dict(saved_inner, config=template["config"])
        plan.family_draws = list(state["family_draws"])
        return plan
    old_slot = {name: slot for slot, name in enumerate(saved_families) if name is not None}
    plan.new_families = [name for name in families if name not in old_slot]
    kept = set(families)
    plan.dropped_families = [name for name in saved_families if name is not None and name not in kept]
    plan.inner = _by_family(saved_inner, template, old_slot, len(saved_families), families, keep_rng=same_sampler)
    plan.family_draws = [state["family_draws"][old_slot[name]] if name in old_slot else 0 for name in families]
    return plan


def _from_version_1(state: dict[str, Any], template: dict[str, Any], families: Sequence[str]) -> dict[str, Any]:
    """A checkpoint of the first adapter version, which kept no family names: its inner state is
    upgraded (`openenv_prime.samplers.upgrade_state_dict`: statistics kept, shuffle cycles restart),
    and the family names are this run's, which is only right when the pool is unchanged."""
    from openenv_prime.samplers.upgrade import upgrade_state_dict

    inner = state.get("inner")
    if isinstance(inner, dict) and inner.get("version") == 1:
        try:
            inner = upgrade_state_dict(inner)
        except (TypeError, ValueError) as exc:
            _fail(f"inner state of version 1 cannot be upgraded: {exc}")
    pool = inner.get("pool") if isinstance(inner, dict) else None
    if not isinstance(pool, dict) or pool.get("fingerprint") != template["pool"]["fingerprint"]:
        _fail(
            "was saved by the first adapter version on another task pool or with other families, and that "
            "version kept no family names to carry statistics over; resume it once with "
            "orchestrator.ckpt.skip_progress = true"
        )
    # Fields newer than version 1 (e.g. the curriculum's `lineage`) start as in a fresh sampler.
    inner = {**{name: copy.deepcopy(value) for name, value in template.items() if name not in inner}, **inner}
    draws = inner.get("stats", {}).get("draws")
    return {
        **state,
        "version": _DENSE,
        "inner": inner,
        "families": list(families),
        "family_draws": list(draws) if isinstance(draws, list) else [0] * len(families),
    }


def _dense(state: dict[str, Any]) -> dict[str, Any]:
    """A sparse checkpoint as the dense form: a family it did not store held nothing (its name
    unknown: None, which only a changed pool would need, and then it starts from the prior anyway)."""
    inner = state.get("inner")
    if not isinstance(inner, dict) or not isinstance(inner.get("pool"), dict):
        _fail("inner must be the inner sampler's state dict, with its pool")
    try:
        dense_inner = expand(inner)
    except ValueError as exc:
        _fail(f"inner: {exc}")
    stored = inner.get(STORED_KEYS)
    if not isinstance(stored, list):
        _fail(f"inner must be a sparse inner state, with {STORED_KEYS}")
    count = state.get("num_families")
    if isinstance(count, bool) or not isinstance(count, int) or count < 1:
        _fail(f"num_families must be an int >= 1, got {count!r}")
    if inner["pool"].get("num_keys") != count:
        _fail(f"inner state has {inner['pool'].get('num_keys')!r} keys but num_families is {count}")
    families, draws = state.get("families"), state.get("family_draws")
    for name, value in (("families", families), ("family_draws", draws)):
        if not isinstance(value, list) or len(value) != len(stored):
            _fail(f"{name} must be a list of {len(stored)} entries, one per stored family (inner.{STORED_KEYS})")
    dense_families: list[Any] = [None] * count
    dense_draws: list[Any] = [0] * count
    for slot, name, drawn in zip(stored, families, draws):
        if name is None:
            _fail(f"families holds None for stored family slot {slot}")
        dense_families[slot] = name
        dense_draws[slot] = drawn
    return {**state, "version": _DENSE, "inner": dense_inner, "families": dense_families, "family_draws": dense_draws}


def _changed(old: Any, new: Any) -> dict[str, tuple[Any, Any]]:
    old = old if isinstance(old, dict) else {}
    new = new if isinstance(new, dict) else {}
    return {
        name: (old.get(name), new.get(name))
        for name in sorted(set(old) | set(new))
        if name != "seed" and old.get(name) != new.get(name)
    }


def _by_family(
    saved: dict[str, Any],
    template: dict[str, Any],
    old_slot: dict[str, int],
    old_k: int,
    families: Sequence[str],
    *,
    keep_rng: bool,
) -> dict[str, Any]:
    """The template with every per-family list of the saved state (`old_k` families, those named in
    `old_slot` carried) moved to the new family order."""
    new_k = len(families)
    out = copy.deepcopy(template)
    if keep_rng and "rng" in saved:
        out["rng"] = copy.deepcopy(saved["rng"])
    for section, fresh in out.items():
        old = saved.get(section)
        if section in _NOT_BY_FAMILY or not isinstance(fresh, dict) or not isinstance(old, dict):
            continue
        for name, fresh_values in fresh.items():
            old_values = old.get(name)
            if not (isinstance(fresh_values, list) and len(fresh_values) == new_k):
                continue
            if not (isinstance(old_values, list) and len(old_values) == old_k):
                _fail(f"inner.{section}.{name} must be a list of {old_k} values, one per saved family")
            fresh[name] = [
                copy.deepcopy(old_values[old_slot[family]]) if family in old_slot else fresh_values[slot]
                for slot, family in enumerate(families)
            ]
    return out
