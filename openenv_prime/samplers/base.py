"""The one interface every trainer drives: sample tasks, report each scored group back."""

from __future__ import annotations

from typing import Any, Iterable, Protocol, Sequence, runtime_checkable

from openenv_prime.samplers.task import Task


@runtime_checkable
class TaskSampler(Protocol):
    def sample(self, n: int) -> list[Task]:
        """Draw ``n`` tasks. Never waits for updates."""

    def update(self, key: str, rewards: Sequence[float], costs: Sequence[float] | None = None) -> None:
        """Report one scored group of ``key``: one reward per rollout, optionally one cost per rollout."""

    def state_dict(self) -> dict[str, Any]:
        """Plain JSON-serializable state, RNG included, with a version field."""

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore a state from ``state_dict``; continuing gives the draws an uninterrupted run would give."""

    def metrics(self) -> dict[str, float]:
        """Flat numbers, names with ``/`` (per-key ones as ``key/<key>/<name>``)."""

    def key_metrics(self, keys: Iterable[str] | None = None, *, top: int | None = None) -> dict[str, dict[str, float]]:
        """Per-key metrics as ``{key: {name: value}}``: for ``keys``, the ``top`` most drawn, or all."""
