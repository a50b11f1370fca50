"""Which family a task belongs to: one rule for the eval, the verifiers taskset, the MLX trainer and the prime-rl adapter.

A family groups tasks for per-family accuracy and for curricula (a difficulty tier; a dataset and its tier). Its key is
``str()`` of one field of the task's record (a task spec, or a verifiers task's data), named by a dotted path
(``tier``, ``info.level``, ``spec.tier``). Which field (:func:`choose_family_field`):

1. the one the user sets (a flag or a config field; ``none``/``null`` puts every task in one family, ``"all"``);
2. else the one the server declares for the split: ``"family_field"`` in the split's ``/splits`` entry
   (``{"name": "test", "type": "test", "family_field": "family"}``; ``null`` declares that the tasks have none);
3. else ``family`` when the specs have that field, else ``tier``;
4. else none: one family, ``"all"``.

A task without a value at the chosen field is an error naming the task, its fields and the setting to change, so
tasks of different families are never pooled without a word.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

NO_FAMILY = "all"
"""The family of every task when tasks are not grouped."""
AUTO = "auto"
"""The setting that lets the server (its declaration, else its specs' conventional fields) name the families."""
DECLARATION = "family_field"
"""The key of a ``/splits`` entry that declares the split's family field."""
CONVENTIONAL_FIELDS = ("family", "tier")
"""Spec fields taken as the family, in this order, when neither the user nor the server names one."""


class FamilyFieldError(ValueError):
    """A task has no value at the family field; the message names the task, its fields and the setting."""


def field_value(record: Any, path: str) -> Any:
    """``record.a.b`` for path ``"a.b"``, through mapping keys and attributes (pydantic extras too); None when absent.
    A mapping key that itself contains dots is found first."""
    if isinstance(record, Mapping) and path in record:
        return record[path]
    value = record
    for part in path.split("."):
        value = value.get(part) if isinstance(value, Mapping) else getattr(value, part, None)
        if value is None:
            return None
    return value


def family_key(
    record: Any, field: str | None, *, task: str = "a task", setting: str = "family_field", otherwise: str = "none"
) -> str:
    """The family of the task whose record is ``record``: ``str(value at field)``, or ``"all"`` when ``field`` is None.

    ``task`` names the task and ``setting`` the flag that sets the field, in the error raised when the record has
    no value there; ``otherwise`` is what the setting takes for no families (``none``, ``null``, ...)."""
    if field is None:
        return NO_FAMILY
    value = field_value(record, field)
    if value is None or value == "":
        raise FamilyFieldError(
            f"{task} has no family field {field!r}; its fields are {_fields(record)}: set {setting} to a field "
            f"every task has, or to {otherwise}"
        )
    return str(value)


@dataclass(frozen=True)
class FamilyField:
    """The field chosen and why: ``origin`` is "set" (by the user), "declared" (by the server), "found" (a
    conventional field of the specs) or "none" (one family)."""

    name: str | None
    origin: str

    def note(self, setting: str = "family_field") -> str | None:
        """One line for the output saying where the families came from; None when the user set the field."""
        if self.origin == "set":
            return None
        other = f"to group them by another task field, set {setting}"
        if self.origin == "declared":
            if self.name is None:
                return (f"families: one group, {NO_FAMILY!r}: the server says its tasks have no field that groups "
                        f"them; to group them, set {setting} to a task field")
            return (f"families: the tasks are grouped by their {self.name!r} field, which the server names for this "
                    f"split (in /splits), for per-family accuracy and the curriculum; {other}")
        if self.origin == "found":
            return (f"families: the tasks are grouped by their {self.name!r} field, for per-family accuracy and the "
                    f"curriculum; {other}")
        return (f"families: one group, {NO_FAMILY!r}: the server names no field that groups the tasks and they have "
                f"no 'family' or 'tier' field; to group them, set {setting} to a task field")


def choose_family_field(
    setting: str | None, specs: Iterable[Mapping[str, Any]], split_entry: Mapping[str, Any] | None = None
) -> FamilyField:
    """The family field by the module's rule: ``setting`` unless it is :data:`AUTO`; else what ``split_entry`` (the
    split's ``/splits`` entry, None when the server lists none) declares; else the first of
    :data:`CONVENTIONAL_FIELDS` that any spec has; else none."""
    if setting != AUTO:
        return FamilyField(setting, "set")
    if split_entry is not None and DECLARATION in split_entry:
        declared = split_entry[DECLARATION]
        if declared is not None and not (isinstance(declared, str) and declared):
            raise ValueError(
                f"the server's /splits entry {dict(split_entry)} declares family_field {declared!r}; it must be a "
                "spec field name or null"
            )
        return FamilyField(declared, "declared")
    present = {key for spec in specs for key in CONVENTIONAL_FIELDS if field_value(spec, key) is not None}
    found = next((key for key in CONVENTIONAL_FIELDS if key in present), None)
    return FamilyField(found, "found") if found else FamilyField(None, "none")


def _fields(record: Any) -> list[str]:
    if isinstance(record, Mapping):
        return sorted(str(key) for key in record)
    dumped = record.model_dump() if hasattr(record, "model_dump") else vars(record) if hasattr(record, "__dict__") else {}
    return sorted(str(key) for key in dumped)
