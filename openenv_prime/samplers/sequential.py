"""Tasks in the order given, each exactly once per epoch; epochs repeat. The baseline with no randomness."""

from __future__ import annotations

from typing import Any, Iterable

from openenv_prime.samplers.pool import TaskPool
from openenv_prime.samplers.pooled import PooledSampler
from openenv_prime.samplers.statecheck import parse_count
from openenv_prime.samplers.task import Task


class SequentialSampler(PooledSampler):
    def __init__(self, tasks: Iterable[Task] | TaskPool) -> None:
        super().__init__(tasks, seed=0)
        self._cursor = 0
        self._epoch = 0

    @property
    def epoch(self) -> int:
        """How many full passes over the pool have been drawn."""
        return self._epoch

    def _draw(self) -> int:
        position = self._cursor
        self._cursor += 1
        if self._cursor == len(self.pool):
            self._cursor = 0
            self._epoch += 1
        return position

    def _config(self) -> dict[str, Any]:
        return {}

    def _export(self) -> dict[str, Any]:
        return {"cursor": self._cursor, "epoch": self._epoch}

    def _import(self, state: dict[str, Any]) -> dict[str, Any]:
        cursor = parse_count(state.get("cursor"), "cursor", high=len(self.pool) - 1)
        return {"_cursor": cursor, "_epoch": parse_count(state.get("epoch"), "epoch")}
