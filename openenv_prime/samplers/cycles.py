"""Per-key shuffled cycles: every task of a key comes once before any repeats, in a fresh order each cycle.

A lazy Fisher-Yates shuffle, so a draw is O(1) however many tasks the key holds (no reshuffle spike
at the start of a cycle). Each cycle's swaps come from a counter-based hash of (cycle seed, position)
rather than from the sampler's RNG, so a key's place in its cycle is fully described by two numbers:
the state stores ``[slot, seed, position]`` for keys in mid-cycle only (a few bytes per key, nothing
per task), and loading replays the swaps up to the position. The swaps themselves live in a dict per
key (only displaced positions), in memory only.
"""

from __future__ import annotations

import random
from typing import Any

from openenv_prime.samplers.pool import TaskPool
from openenv_prime.samplers.statecheck import MAX_COUNT, fail, parse_count

_M64 = (1 << 64) - 1
SEED_BITS = 53  # cycle seeds stay exact in JSON doubles


def _step(displaced: dict[int, int], seed: int, pos: int, size: int) -> int:
    """One Fisher-Yates step at ``pos``: swap it with a later position chosen by splitmix64 of (seed,
    pos), and return the member offset that lands at ``pos``."""
    z = (seed + (pos + 1) * 0x9E3779B97F4A7C15) & _M64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _M64
    j = pos + (z ^ (z >> 31)) % (size - pos)
    at_pos = displaced.pop(pos, pos)
    if j == pos:
        return at_pos
    picked = displaced.get(j, j)
    displaced[j] = at_pos
    return picked


class KeyCycles:
    __slots__ = ("members", "seeds", "positions", "displaced")

    def __init__(self, pool: TaskPool) -> None:
        self.members = pool.members
        k = len(pool.members)
        self.seeds = [0] * k
        self.positions = [0] * k
        # displaced[slot][i]: the member offset now at position i of the key's cycle, where it differs from i.
        self.displaced: list[dict[int, int] | None] = [None] * k

    def next(self, slot: int, rng: random.Random) -> int:
        """The pool position of the next task of key ``slot``."""
        members = self.members[slot]
        size = len(members)
        if size == 1:
            return members[0]
        pos = self.positions[slot]
        if pos == 0:  # a new cycle: the only use of the sampler's RNG
            seed = self.seeds[slot] = rng.getrandbits(SEED_BITS)
            displaced = self.displaced[slot] = {}
        else:
            seed, displaced = self.seeds[slot], self.displaced[slot]
        picked = _step(displaced, seed, pos, size)
        if pos + 1 < size:
            self.positions[slot] = pos + 1
        else:
            self.positions[slot] = 0
            self.displaced[slot] = None
        return members[picked]

    def to_json(self) -> list[list[int]]:
        return [[slot, self.seeds[slot], pos] for slot, pos in enumerate(self.positions) if pos]

    @classmethod
    def from_json(cls, data: Any, pool: TaskPool) -> "KeyCycles":
        """Parse ``[[slot, seed, position], ...]`` (ValueError naming the entry) and replay each cycle."""
        cycles = cls(pool)
        if not isinstance(data, list):
            raise fail("cycles", f"must be a list of [slot, seed, position], got {type(data).__name__}")
        k = len(pool.members)
        for n, entry in enumerate(data):
            name = f"cycles[{n}]"
            if not isinstance(entry, list) or len(entry) != 3:
                raise fail(name, f"must be [slot, seed, position], got {entry!r}")
            slot = parse_count(entry[0], name + "[0] (slot)", high=k - 1)
            seed = parse_count(entry[1], name + "[1] (seed)", high=MAX_COUNT - 1)
            size = len(pool.members[slot])
            if size == 1:
                raise fail(name, f"gives a cycle position for key {pool.keys[slot]!r}, which has one task")
            pos = parse_count(entry[2], name + "[2] (position)", high=size - 1)
            if pos == 0 or cycles.positions[slot]:
                raise fail(name, "must be a key in mid-cycle (position > 0), listed once")
            cycles.seeds[slot] = seed
            cycles.positions[slot] = pos
        for slot, pos in enumerate(cycles.positions):
            if pos:
                displaced: dict[int, int] = {}
                size, seed = len(pool.members[slot]), cycles.seeds[slot]
                for i in range(pos):
                    _step(displaced, seed, i, size)
                cycles.displaced[slot] = displaced
        return cycles
