"""A sampler state with only the keys that hold something: the compact form for many keys.

A state stores one value per key in each per-key column (``stats.*``, ``curriculum.*``). With a family
per task (100,000 keys, say) most keys were never drawn, and their columns are all zero: the dense
state is megabytes of zeros. ``compact`` keeps the keys with any non-zero value (``stored_keys``, their
slots in pool order) and each column at those keys only; ``expand`` restores the dense state exactly,
so a sampler loaded from either continues identically. ``load_state_dict`` and ``merge_state_dicts``
take both forms; a sampler's own ``state_dict()`` stays dense.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from openenv_prime.samplers.statecheck import fail, parse_count

PER_KEY_SECTIONS = ("stats", "curriculum")
"""Sections whose lists hold one value per key (in pool order); a sampler adding per-key columns lists its section here."""
STORED_KEYS = "stored_keys"


def compact(state: dict[str, Any], also: Iterable[int] = ()) -> dict[str, Any]:
    """``state`` (a dense ``state_dict()``) with each per-key column kept at its non-zero keys only
    (and at the key slots ``also``, e.g. those a caller stores data of its own for)."""
    columns = [(name, field) for name in PER_KEY_SECTIONS if isinstance(state.get(name), dict)
               for field, values in state[name].items() if isinstance(values, list)]
    stored = {slot for name, field in columns for slot, value in enumerate(state[name][field]) if value}
    stored = sorted(stored.union(also))
    out = dict(state)
    for name in PER_KEY_SECTIONS:
        if isinstance(state.get(name), dict):
            out[name] = dict(state[name])
    for name, field in columns:
        values = state[name][field]
        out[name][field] = [values[slot] for slot in stored]
    out[STORED_KEYS] = stored
    return out


def expand(state: Any) -> Any:
    """The dense state of a ``compact`` one (anything else is returned as it is). Only the layout is
    checked here (ValueError naming the field); the values are checked by whoever loads the state."""
    if not isinstance(state, dict) or STORED_KEYS not in state:
        return state
    pool = state.get("pool")
    k = pool.get("num_keys") if isinstance(pool, dict) else None
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise fail("pool.num_keys", f"must be an int >= 1 to expand stored_keys, got {k!r}")
    stored = state[STORED_KEYS]
    if not isinstance(stored, list):
        raise fail(STORED_KEYS, f"must be a list of key slots, got {type(stored).__name__}")
    slots = [parse_count(slot, f"{STORED_KEYS}[{n}]", high=k - 1) for n, slot in enumerate(stored)]
    if any(a >= b for a, b in zip(slots, slots[1:])):
        raise fail(STORED_KEYS, "must list each key slot once, in increasing order")
    out = {name: value for name, value in state.items() if name != STORED_KEYS}
    for name in PER_KEY_SECTIONS:
        section = state.get(name)
        if not isinstance(section, dict):
            continue
        out[name] = dict(section)
        for field, values in section.items():
            if not isinstance(values, list):
                continue
            if len(values) != len(slots):
                raise fail(f"{name}.{field}", f"must hold {len(slots)} values, one per stored key")
            dense: list[Any] = [0] * k
            for slot, value in zip(slots, values):
                dense[slot] = value
            out[name][field] = dense
    return out
