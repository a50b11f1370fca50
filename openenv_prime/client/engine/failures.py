"""When the environment fails, not the model: the episode ends, the run goes on, and a run that cannot succeed stops.

A step the server cannot run (a socket it closed that a replay could not restore, an answer that never came, a frame
that is not the protocol), or an error that answers every action of an episode alike (the rule is in
:mod:`~openenv_prime.client.engine.episode`: an error answering one action is the model's to read and fix), says
nothing about the model's reply. So the episode ends with stop ``"error"`` and no reward: it is left out of accuracy
and of the sampler's evidence (never a silent 0.0), and its socket is replaced by a fresh one, since the
environment's state behind it is unknown. One such episode is the environment's bad luck; :data:`ERRORS_IN_A_ROW` of
them in a row, each on a fresh session, mean the run cannot succeed, and it stops with :class:`EnvironmentFailing`,
quoting the environment's own error and saying which it saw: an environment that fails on its own, or one that
answered every action alike (broken whatever the action, or every reply repeats the one mistake it names).
"""

from __future__ import annotations

from typing import Any, Iterable

from openenv_prime.client.wire.errors import OpenEnvError

ERRORS_IN_A_ROW = 8
"""Episodes in a row that the environment failed, after which a run stops: the environment itself is broken."""


class EnvironmentFailing(OpenEnvError):
    """Every recent episode failed inside the environment; the run cannot succeed."""


class ErrorStreak:
    """Counts the episodes the environment failed in a row, in the order they are recorded; one that the environment
    played to its end (scored or not) breaks the streak. One per run (an eval, a trainer, a taskset); a trainer also
    asks it for the never-ending warning, which a run says once (:meth:`never_ending_once`)."""

    def __init__(self, limit: int = ERRORS_IN_A_ROW):
        if limit < 1:
            raise ValueError(f"limit must be at least 1, got {limit}")
        self.limit = limit
        self.count = 0
        self.total = 0
        self.last: str | None = None
        self.alike = 0  # of the episodes in the streak, those whose every action drew one same error
        self.warned = False

    def record(self, episodes: Iterable[Any]) -> None:
        """Record finished episodes; raises :class:`EnvironmentFailing` once ``limit`` in a row failed."""
        for episode in episodes:
            if episode.stop == "error":
                self.count += 1
                self.total += 1
                self.alike += getattr(episode, "alike", 0) > 0
                self.last = episode.error
            elif episode.finished:
                self.count = self.alike = 0
        if self.count >= self.limit:
            raise EnvironmentFailing(self._verdict(), hint=(
                "run one episode by hand against the server and read the server's log; the run stops here because no "
                "episode can be scored"))

    def _verdict(self) -> str:
        """What the streak shows: an environment failing on its own, one answering every action alike, or both."""
        head = f"the environment failed the last {self.count} episodes in a row, each on a fresh session"
        if not self.alike:
            return f"{head}, so it fails on its own, whatever the model replies; its last error: {self.last}"
        alike = ("in every one it answered every action sent with one same error" if self.alike == self.count else
                 f"in {self.alike} of them it answered every action sent with one same error, and in the rest it "
                 "failed on its own")
        return (f"{head}: {alike}. Either it fails whatever the action, or the replies repeat one mistake that the "
                f"error names, uncorrected after the model read it (then the prompt does not say what the environment "
                f"needs); its last error: {self.last}")

    def never_ending_once(self, episodes: Iterable[Any], *, action_setting: str) -> str | None:
        """:func:`never_ending`'s warning for ``episodes``, the first time a run calls for it; None after."""
        if self.warned:
            return None
        silent = never_ending(episodes, action_setting=action_setting)
        self.warned = silent is not None
        return silent


def never_ending(episodes: Iterable[Any], *, action_setting: str) -> str | None:
    """What to say when no episode ended before the step limit and no reply was invalid (None otherwise): the
    environment took every reply and never finished, the sign of replies that land in a field which does not carry
    the move (repl_env's ``final_answer`` while ``is_final`` stays false). Names the fields the replies filled, those
    left to the server, and ``action_setting`` (how the user names the field that carries the move)."""
    played = [episode for episode in episodes if episode.finished]
    if not played or any(episode.stop != "max_steps" or episode.invalid_actions for episode in played):
        return None
    limit = played[0].rules.max_steps
    protocol = played[0].protocol
    actions = protocol.action_format
    if actions is None:
        filled = "tool calls"
        left = ""
    else:
        names = [actions.field] if actions.field is not None else list(actions.fields)  # a bare reply fills one
        filled = ", ".join(f"`{name}`" for name in names)
        left = [name for name in [*actions.fields, *actions.settings] if name not in names]
        left = f"; the action's other fields: {', '.join(f'`{name}`' for name in left)}" if left else ""
    return (f"no episode ended before the step limit ({limit} steps) and no reply was invalid: the environment took "
            f"every reply and never finished an episode. Either it ends episodes only at a step limit (then nothing is "
            f"wrong), or the replies land where they do not make a move: they filled {filled}{left}. If another field "
            f"carries the move, name it with {action_setting}")
