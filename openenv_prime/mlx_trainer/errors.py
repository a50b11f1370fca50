"""Why a training run stopped early; each message says what to do next."""

from __future__ import annotations


class TrainingError(RuntimeError):
    """The run cannot go on (environment gone, run directory in the way); the message says what to do."""


class TrainingInterrupted(TrainingError):
    """Ctrl-C or SIGTERM: the run saved what it had and stopped; the message says how to continue."""
