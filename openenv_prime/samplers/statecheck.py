"""Parsing saved sampler states: every field checked, every failure a ValueError that names the field.

Only parses and returns new values; samplers assign them once the whole state has passed (see
``PooledSampler.load_state_dict``), so a rejected state never leaves a sampler half-loaded.
"""

from __future__ import annotations

import math
from typing import Any

SAMPLER_STATE_VERSION = 2
"""The layout of a sampler's ``state_dict`` (its ``version`` key); a trainer checkpoint and the adapter's state hold one."""
# Largest count a state may hold: every int up to here is exact in a JSON double, and 0.9**MAX_COUNT
# is a plain float (a larger int exponent can overflow the conversion).
MAX_COUNT = 2**53


def fail(name: str, problem: str) -> ValueError:
    return ValueError(f"state_dict field {name} {problem}")


def section(state: dict[str, Any], name: str) -> dict[str, Any]:
    value = state.get(name)
    if not isinstance(value, dict):
        raise fail(name, f"must be a dict, got {type(value).__name__}")
    return value


def parse_count(value: Any, name: str, high: int = MAX_COUNT) -> int:
    """An int in [0, high]; an integral float (3.0) is accepted, bools and strings are not."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise fail(name, f"holds {value!r}, not an int")
    if isinstance(value, float) and not (math.isfinite(value) and value == int(value)):
        raise fail(name, f"holds {value!r}, not an int")
    if not 0 <= value <= high:
        raise fail(name, f"holds {value!r}, outside [0, {high}]")
    return int(value)


def parse_amount(value: Any, name: str) -> float:
    """A finite float >= 0: decayed counts, costs, sums of estimates."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise fail(name, f"holds {value!r}, not a number")
    if not math.isfinite(value) or value < 0:
        raise fail(name, f"holds {value!r}, not a finite number >= 0")
    return float(value)


def parse_list(value: Any, name: str, length: int, kind: type) -> list:
    """``length`` counts (``kind=int``) or finite amounts >= 0 (``kind=float``), one per key."""
    if not isinstance(value, list) or len(value) != length:
        raise fail(name, f"must be a list of {length} numbers, one per key")
    parse = parse_count if kind is int else parse_amount
    return [parse(item, name) for item in value]
