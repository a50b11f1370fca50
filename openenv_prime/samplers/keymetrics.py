"""Per-key metrics as data ({key: {name: value}}), and the flat names frameworks log them under.

Samplers hand per-key numbers around as dicts; only the edge that needs flat metric names (prime-rl's
metrics, the trainer's log line, ``metrics()``) turns them into ``key/<key>/<name>``, which nothing
parses back (a key may itself hold ``/``).
"""

from __future__ import annotations

import heapq
from typing import Mapping, Sequence


def most_drawn(draws: Sequence[float], n: int) -> list[int]:
    """The positions of the ``n`` largest ``draws``, largest first, ties in position order; O(K log n)."""
    if n <= 0:
        return []
    return heapq.nlargest(n, range(len(draws)), key=draws.__getitem__)


def flat_key_metrics(per_key: Mapping[str, Mapping[str, float]]) -> dict[str, float]:
    """``{key: {name: value}}`` as ``{"key/<key>/<name>": value}``."""
    return {f"key/{key}/{name}": value for key, values in per_key.items() for name, value in values.items()}
