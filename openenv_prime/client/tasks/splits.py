"""Which split a consumer plays: the one asked for, checked against the splits the server lists, or the test split
by one rule when none is asked for.

Servers name their held-out split differently: ours and ORS's ``test``, verifiers environments imported by
``openenv import`` ``eval``, others ``validation``. The test split is the first of :data:`TEST_SPLITS` the server (or
the task list) lists, and the output says so whenever it is not ``test``. A split asked for that is not listed is an
error naming the splits there are. A server without ``list_splits`` is taken at its word (``test`` when none is
asked for): it answers an unknown split itself.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from openenv_prime.client.wire.errors import RouteNotSupportedError, UnknownSplitError

if TYPE_CHECKING:
    from openenv_prime.client.tasks.tasks import TaskSource

TEST_SPLITS = ("test", "eval", "validation")
"""The names a held-out split goes by, in the order the test split is chosen from them."""


@dataclass(frozen=True)
class ChosenSplit:
    name: str
    note: str | None = None
    """Set when the rule chose another split than ``test``: printed, so a run never plays another split silently."""


def choose_split(source: "TaskSource", wanted: str | None, *, setting: str) -> ChosenSplit:
    """``wanted`` checked against ``source``'s splits, or (``wanted`` None) its test split by the module's rule.

    ``setting`` is the flag or config field that names the split (``--split``, ``environment.test_split``), for
    the error (:class:`UnknownSplitError`, a ValueError) and the note."""
    try:
        listed = source.splits()
    except RouteNotSupportedError:
        listed = None
    if wanted is not None:
        if listed is not None and wanted not in listed:
            raise UnknownSplitError(
                f"{source.kind} {source.where} has no split {wanted!r}; set {setting} to one of {listed}"
            )
        return ChosenSplit(wanted)
    if listed is None:
        return ChosenSplit(TEST_SPLITS[0])
    name = next((split for split in TEST_SPLITS if split in listed), None)
    if name is None:
        raise UnknownSplitError(
            f"{source.kind} {source.where} lists no test split (none of {', '.join(TEST_SPLITS)}); its splits are "
            f"{listed}: set {setting} to the one to play"
        )
    if name == TEST_SPLITS[0]:
        return ChosenSplit(name)
    return ChosenSplit(name, f"split {name!r}: the server lists no 'test' split, and {name!r} comes first of "
                             f"{', '.join(TEST_SPLITS)} ({setting} chooses another)")
