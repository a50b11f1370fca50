"""Reading an OpenEnv action schema (the ``action`` entry of ``GET /schema``, a pydantic JSON schema).

Only what turning a reply into an action needs: follow ``$ref``/``$defs``, find the allowed values of Enum and
``Literal`` fields, describe a field for the model, and validate a candidate action with ``jsonschema`` so that
a bad reply is fed back to the model before it ever reaches the server.
"""

from __future__ import annotations

import json
from typing import Any

from jsonschema import Draft202012Validator

# Fields every OpenEnv action carries that a model never fills.
BOOKKEEPING_ACTION_FIELDS = frozenset({"metadata"})


def resolve(spec: Any, root: dict) -> dict:
    """``spec`` with a local ``$ref`` (``#/$defs/Name``) or a one-item ``allOf`` replaced by its target."""
    for _ in range(32):  # a bound: a self-referencing alias would loop forever
        if not isinstance(spec, dict):
            return {}
        if isinstance(spec.get("$ref"), str) and spec["$ref"].startswith("#/"):
            target: Any = root
            for part in spec["$ref"][2:].split("/"):
                target = target.get(part, {}) if isinstance(target, dict) else {}
            extra = {k: v for k, v in spec.items() if k != "$ref"}
            spec = {**target, **extra}
            continue
        if isinstance(spec.get("allOf"), list) and len(spec["allOf"]) == 1:
            extra = {k: v for k, v in spec.items() if k != "allOf"}
            spec = {**resolve(spec["allOf"][0], root), **extra}
            continue
        return spec
    return spec


def options(spec: Any, root: dict) -> list[dict]:
    """The alternatives of a field (its ``anyOf``/``oneOf`` members, resolved), without ``null``; else the field."""
    spec = resolve(spec, root)
    members = spec.get("anyOf") or spec.get("oneOf")
    if not isinstance(members, list):
        return [spec]
    resolved = [resolve(member, root) for member in members]
    return [member for member in resolved if member.get("type") != "null"] or [spec]


def choices(spec: Any, root: dict) -> list[Any] | None:
    """The allowed values of an Enum or ``Literal`` field (through ``$ref`` and ``Optional``), else None."""
    values: list[Any] = []
    for member in options(spec, root):
        if isinstance(member.get("enum"), list):
            values.extend(member["enum"])
        elif "const" in member:
            values.append(member["const"])
        else:
            return None
    return values or None


def is_text(spec: Any, root: dict) -> bool:
    """A free-text field: a string without a fixed set of values (the reply goes in verbatim)."""
    if choices(spec, root) is not None:
        return False
    return any(member.get("type") == "string" for member in options(spec, root))


def type_name(spec: Any, root: dict) -> str:
    """A short description of a field's type for the instructions, e.g. ``integer`` or ``one of "UP", "DOWN"``."""
    allowed = choices(spec, root)
    if allowed is not None:
        return "one of " + ", ".join(json.dumps(value) for value in allowed)
    names = []
    for member in options(spec, root):
        kind = member.get("type", "any JSON value")
        if kind == "array":
            kind = f"array of {type_name(member.get('items', {}), root)}" if member.get("items") else "array"
        names.append(kind if isinstance(kind, str) else " or ".join(kind))
    return " or ".join(dict.fromkeys(names))


def placeholder(spec: Any, root: dict) -> Any:
    """A value of the field's type, for the example action in the instructions."""
    if "default" in resolve(spec, root) and resolve(spec, root)["default"] is not None:
        return resolve(spec, root)["default"]
    allowed = choices(spec, root)
    if allowed:
        return allowed[0]
    kind = options(spec, root)[0].get("type")
    return {"string": "...", "integer": 0, "number": 0.0, "boolean": False, "array": [], "object": {}}.get(kind, None)


def validator(schema: dict) -> Draft202012Validator:
    """A validator for ``schema`` (build it once per schema: building costs more than validating)."""
    return Draft202012Validator(schema)


def validation_errors(value: Any, checker: Draft202012Validator) -> list[dict]:
    """Where ``value`` breaks the checker's schema, as pydantic-style ``{"loc", "msg", "type"}`` entries (empty when valid)."""
    errors = sorted(checker.iter_errors(value), key=lambda error: list(error.absolute_path))
    return [
        {"loc": list(error.absolute_path), "msg": error.message, "type": str(error.validator)}
        for error in errors
    ]
