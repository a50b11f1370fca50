"""Per-task evidence inside a key, and the draw within a key that it thins.

A key's tasks need not be alike: inside one difficulty tier some tasks are solved every time and some
never, and a group on either teaches nothing. Each task that has been reported keeps decayed success
and failure counts of its own (``s <- gamma*s + successes`` on each of its updates, as the key does).
Its estimate borrows the key's as a prior of ``PRIOR`` pseudo-rollouts, ``p_task = (PRIOR*p_key + s) /
(PRIOR + s + f)``, so a task never reported is its key, and the key's progress still moves a task not
drawn for a while. The within-key draw takes the key's next task in its shuffle cycle and keeps it with
probability ``min(1, w(p_task) / w(p_key))`` (w: the sampler's weight of a success rate, without the
floor), else moves on in the cycle, at most ``MAX_PROPOSALS`` times (the last is kept): tasks at least
as promising as their key are never skipped, the others in proportion. Without evidence every task is
kept at once and no random number is drawn, so the draws are the plain cycle's.

Stored sparsely, ``[[position, updates, successes, failures], ...]`` in pool order, for tasks of keys
holding more than one task that have been reported; nothing per task otherwise.
"""

from __future__ import annotations

from typing import Any

from openenv_prime.samplers.pool import TaskPool
from openenv_prime.samplers.statecheck import fail, parse_amount, parse_count

PRIOR = 2.0  # the key's estimate counts as this many rollouts of a task's own evidence
MAX_PROPOSALS = 8  # tasks looked at per within-key draw at most


class TaskEvidence:
    """Decayed per-task counts: position -> [updates, successes, failures]."""

    __slots__ = ("counts",)

    def __init__(self) -> None:
        self.counts: dict[int, list] = {}

    def __bool__(self) -> bool:
        return bool(self.counts)

    def add(self, position: int, successes: int, failures: int, gamma: float) -> None:
        entry = self.counts.get(position)
        if entry is None:
            self.counts[position] = [1, float(successes), float(failures)]
        else:
            entry[0] += 1
            entry[1] = gamma * entry[1] + successes
            entry[2] = gamma * entry[2] + failures

    def estimate(self, position: int, p_key: float) -> float | None:
        """The task's success rate with its key's as prior; None for a task never reported."""
        entry = self.counts.get(position)
        if entry is None:
            return None
        s, f = entry[1], entry[2]
        return (PRIOR * p_key + s) / (PRIOR + s + f)

    def to_json(self) -> list[list]:
        return [[position, *self.counts[position]] for position in sorted(self.counts)]

    @classmethod
    def from_json(cls, data: Any, pool: TaskPool, key_of_task: list[int]) -> "TaskEvidence":
        """Parse ``[[position, updates, successes, failures], ...]`` (ValueError naming the entry)."""
        if not isinstance(data, list):
            raise fail("task_evidence", f"must be a list of [position, updates, successes, failures], got {type(data).__name__}")
        evidence = cls()
        previous = -1
        for n, entry in enumerate(data):
            name = f"task_evidence[{n}]"
            if not isinstance(entry, list) or len(entry) != 4:
                raise fail(name, f"must be [position, updates, successes, failures], got {entry!r}")
            position = parse_count(entry[0], name + "[0] (position)", high=len(pool) - 1)
            if position <= previous:
                raise fail(name, "must come after the entry before it (positions in increasing order, each once)")
            previous = position
            if len(pool.members[key_of_task[position]]) == 1:
                raise fail(name, f"holds evidence for the only task of key {pool.keys[key_of_task[position]]!r}, "
                                 f"which the key's own evidence already is")
            updates = parse_count(entry[1], name + "[1] (updates)")
            if updates == 0:
                raise fail(name, "has 0 updates: only reported tasks are stored")
            successes = parse_amount(entry[2], name + "[2] (successes)")
            failures = parse_amount(entry[3], name + "[3] (failures)")
            evidence.counts[position] = [updates, successes, failures]
        return evidence
