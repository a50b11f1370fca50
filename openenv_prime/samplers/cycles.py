"""Per-key shuffled cycles: every task of a key comes once before any repeats, in a fresh order each cycle.

A lazy Fisher-Yates shuffle: each draw swaps one random not-yet-drawn task into place, so a draw is
O(1) however many tasks the key holds (no reshuffle spike at the start of a cycle).
"""

from __future__ import annotations

import random
from typing import Any

from openenv_prime.samplers.pool import TaskPool


class KeyCycles:
    __slots__ = ("orders", "positions")

    def __init__(self, pool: TaskPool) -> None:
        self.orders = [list(members) for members in pool.members]
        self.positions = [0] * len(self.orders)

    def next(self, slot: int, rng: random.Random) -> int:
        """The pool position of the next task of key ``slot``."""
        order = self.orders[slot]
        size = len(order)
        if size == 1:
            return order[0]
        pos = self.positions[slot]
        j = pos + int(rng.random() * (size - pos))
        order[pos], order[j] = order[j], order[pos]
        self.positions[slot] = pos + 1 if pos + 1 < size else 0
        return order[pos]

    def to_json(self) -> dict[str, Any]:
        return {"orders": [list(o) for o in self.orders], "positions": list(self.positions)}

    @classmethod
    def from_json(cls, data: Any, pool: TaskPool) -> "KeyCycles":
        cycles = cls(pool)
        if not isinstance(data, dict):
            raise ValueError("state_dict field cycles must be a dict with orders and positions")
        orders, positions = data.get("orders"), data.get("positions")
        k = len(pool.members)
        if not isinstance(orders, list) or not isinstance(positions, list) or len(orders) != k or len(positions) != k:
            raise ValueError(f"state_dict field cycles must hold {k} orders and {k} positions")
        for slot, (order, pos, members) in enumerate(zip(orders, positions, pool.members)):
            if not isinstance(order, list) or sorted(order) != sorted(members):
                raise ValueError(f"state_dict field cycles.orders[{slot}] is not an ordering of that key's tasks")
            if isinstance(pos, bool) or not isinstance(pos, int) or not 0 <= pos < len(members):
                raise ValueError(f"state_dict field cycles.positions[{slot}] = {pos!r} is out of range")
        cycles.orders = [list(o) for o in orders]
        cycles.positions = list(positions)
        return cycles
