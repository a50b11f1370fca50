"""The one interface every trainer drives: sample tasks, report each scored group back."""

from __future__ import annotations

from typing import Any, Protocol, Sequence, runtime_checkable

from openenv_prime.samplers.task import Task


@runtime_checkable
class TaskSampler(Protocol):
    """The five methods of OpenEnv RFC 013 ("Task sampling and in-training evaluation"), what every trainer drives.
    A sampler may offer more (this package's samplers add ``key_metrics``, per-key metrics for the trainers' logs, and
    ``probabilities``); a trainer checks for those before it calls them."""

    def sample(self, n: int) -> list[Task]:
        """Draw ``n`` tasks. Never waits for updates."""

    def update(self, key: str | Task, rewards: Sequence[float], costs: Sequence[float] | None = None) -> None:
        """Report one scored group of ``key`` (or of a drawn task): one reward per rollout, and one cost per rollout
        for every group or for none (a run that reports costs for some groups only is refused)."""

    def state_dict(self) -> dict[str, Any]:
        """Plain JSON-serializable state, RNG included, with a version field."""

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore a state from ``state_dict``; continuing gives the draws an uninterrupted run would give."""

    def metrics(self) -> dict[str, float]:
        """Flat numbers, names with ``/`` (per-key ones as ``key/<key>/<name>``)."""
