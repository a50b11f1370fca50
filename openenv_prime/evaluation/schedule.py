"""When a training loop evaluates: the ``EvalSchedule`` of OpenEnv RFC 013 ("Task sampling and in-training evaluation").

A step is the number of optimizer steps done (0 is before the first). The schedule is pure arithmetic on that
number, so every loop (a plain Python loop, the MLX trainer, a TRL callback) evaluates at the same steps for the same
schedule, and a resumed run evaluates where an uninterrupted one would have.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class EvalSchedule:
    """Evaluate at step 0 (``first``), every ``every`` steps, at the ``steps`` listed, and at ``last``.

    ``every=0`` turns the period off; ``last`` is the run's final step (None: unknown, so not scheduled)."""

    every: int = 0
    steps: tuple[int, ...] = field(default_factory=tuple)
    first: bool = True
    last: int | None = None

    def __post_init__(self) -> None:
        if isinstance(self.every, bool) or not isinstance(self.every, int) or self.every < 0:
            raise ValueError(f"EvalSchedule.every must be an integer >= 0 (0: no period), got {self.every!r}")
        steps = tuple(self.steps)
        bad = [s for s in steps if isinstance(s, bool) or not isinstance(s, int) or s < 0]
        if bad:
            raise ValueError(f"EvalSchedule.steps must be integers >= 0, got {bad}")
        object.__setattr__(self, "steps", tuple(sorted(set(steps))))
        if self.last is not None and (isinstance(self.last, bool) or not isinstance(self.last, int) or self.last < 0):
            raise ValueError(f"EvalSchedule.last must be the final step (an integer >= 0) or None, got {self.last!r}")

    def due(self, step: int) -> bool:
        """Whether an eval is scheduled after ``step`` optimizer steps."""
        if step < 0:
            raise ValueError(f"step must be >= 0 (the number of optimizer steps done), got {step}")
        return ((self.first and step == 0) or (self.every > 0 and step > 0 and step % self.every == 0)
                or step in self.steps or step == self.last)

    def with_last(self, last: int) -> "EvalSchedule":
        """The same schedule ending at ``last`` (a trainer knows its final step only when training starts)."""
        return EvalSchedule(self.every, self.steps, self.first, last)
