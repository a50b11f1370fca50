"""The task reference every sampler hands out: which split and index to reset, and the family it belongs to."""

from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Mapping


@dataclass(frozen=True, slots=True)
class Task:
    """One task of an environment's Task API.

    ``key`` is the task's family (e.g. a difficulty tier): curricula keep their statistics per key.
    ``spec`` is the environment's task spec, carried along for the trainer; it takes no part in
    equality or hashing, so two references to the same (split, index, key) are the same task.
    """

    split: str
    index: int
    key: str
    spec: Mapping[str, Any] | None = field(default=None, compare=False, hash=False)

    def __post_init__(self) -> None:
        if not isinstance(self.split, str) or not self.split:
            raise TypeError(f"Task.split must be a non-empty string, got {self.split!r}")
        if isinstance(self.index, bool) or not isinstance(self.index, int) or self.index < 0:
            raise TypeError(f"Task.index must be an int >= 0, got {self.index!r}")
        if not isinstance(self.key, str):
            raise TypeError(
                f"Task.key must be a string, got {type(self.key).__name__} {self.key!r}; "
                f"use str(...) (a chain_sum tier 3 is key '3')"
            )
        if self.spec is not None and not isinstance(self.spec, MappingProxyType):
            object.__setattr__(self, "spec", MappingProxyType(dict(self.spec)))
