"""Durable task identity: the same task gets the same key on every deployment of its server."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

# Where a task sits in a listing, not what it is; left out of the content hash.
_POSITION_FIELDS = ("split", "index")


def durable_id(spec: Mapping[str, Any], id_field: str) -> str:
    """`spec[id_field]` when present, else a hash of the spec's content, which survives reordering."""
    value = spec.get(id_field)
    if value is not None and str(value) != "":
        return str(value)
    content = {k: v for k, v in spec.items() if k not in _POSITION_FIELDS}
    blob = json.dumps(content, sort_keys=True, default=str).encode()
    return "sha256:" + hashlib.sha256(blob).hexdigest()[:16]


def id_like_field(splits: Iterable[Sequence[Mapping[str, Any]]]) -> str | None:
    """The first top-level field named like an id (`id`, `example_id`, `uid`, `taskId`) whose value every spec has,
    as a string or an integer, different for every spec of its split (keys are `env/split/id`, so an imported verifiers
    environment's `example_id`, which counts from 0 in each split, qualifies): the field to name as `id_field`; None
    when there is none. ``splits``: each split's specs."""
    splits = [list(specs) for specs in splits if specs]
    if not splits:
        return None
    for name in splits[0][0]:
        if _named_like_an_id(name) and all(_names_each_once(specs, name) for specs in splits):
            return name
    return None


def _names_each_once(specs: Sequence[Mapping[str, Any]], name: str) -> bool:
    values = [spec.get(name) for spec in specs]
    usable = all(isinstance(v, (str, int)) and not isinstance(v, bool) and str(v) != "" for v in values)
    return usable and len({str(v) for v in values}) == len(values)


def _named_like_an_id(name: str) -> bool:
    lowered = name.lower()
    return lowered in ("id", "uid", "uuid") or lowered.endswith(("_id", "-id")) or name.endswith("Id")


def task_key(env_name: str, split: str, ident: str) -> str:
    """`env/split/id`; an id that already starts with `env/split/` (chain_sum's do) is not prefixed twice."""
    prefix = f"{env_name}/{split}/"
    return ident if ident.startswith(prefix) else prefix + ident


def check_unique(keys: Iterable[str]) -> None:
    """Raise on the first repeated key: curricula and prime-rl's pools key tasks by it."""
    seen: dict[str, int] = {}
    for position, key in enumerate(keys):
        if key in seen:
            raise ValueError(
                f"task key {key!r} repeats (tasks {seen[key]} and {position}); set "
                "--env.taskset.id-field to a spec field that is unique per task"
            )
        seen[key] = position
