"""Seconds spent in each part of this package during a run, to show what it adds to a training step."""

from __future__ import annotations

import time
from collections import defaultdict
from contextlib import contextmanager
from typing import Iterator


class Timers:
    """Summed wall seconds per part: ``sampler`` (sample and update), ``rows`` (dataset bookkeeping), ``rewards``
    (grouping and bookkeeping of the reward hook), ``eval_schedule`` (deciding whether to evaluate), and the time
    the environment server takes (``env_resets``, ``env_play``) and the evals (``eval``), which are not overhead."""

    OVERHEAD = ("sampler", "rows", "rewards", "eval_schedule")

    def __init__(self) -> None:
        self.seconds: dict[str, float] = defaultdict(float)

    @contextmanager
    def time(self, part: str) -> Iterator[None]:
        started = time.perf_counter()
        try:
            yield
        finally:
            self.seconds[part] += time.perf_counter() - started

    def overhead(self) -> float:
        """Seconds in this package's own bookkeeping (the parts in ``OVERHEAD``)."""
        return sum(self.seconds[part] for part in self.OVERHEAD)
