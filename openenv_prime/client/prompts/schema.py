"""Reading an OpenEnv action schema (the ``action`` entry of ``GET /schema``, a pydantic JSON schema).

Only what turning a reply into an action needs: follow ``$ref``/``$defs``, find the allowed values of Enum and
``Literal`` fields and the bounds of numbers, strings and arrays, describe a field for the model, and validate a
candidate action with ``jsonschema`` so that a bad reply is fed back to the model before it ever reaches the server.
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


def kind(spec: Any, root: dict) -> str | None:
    """The field's JSON type (``string``, ``integer``, ...; the first non-null one of an ``Optional``), or None."""
    found = options(spec, root)[0].get("type")
    return found if isinstance(found, str) else None


_BOUNDS = (("minimum", ">="), ("exclusiveMinimum", ">"), ("maximum", "<="), ("exclusiveMaximum", "<"))


def bounds(spec: Any, root: dict) -> str:
    """The field's limits in words (``0 <= value <= 8``, ``1 to 3 characters``, ``at most 4 items``), or ""."""
    parts = []
    for member in options(spec, root):
        limits = {op: member[key] for key, op in _BOUNDS if isinstance(member.get(key), (int, float))}
        low = next((f"{limits[op]} {'<=' if op == '>=' else '<'} " for op in (">=", ">") if op in limits), "")
        high = next((f" {op} {limits[op]}" for op in ("<=", "<") if op in limits), "")
        if low or high:
            parts.append(f"{low}value{high}")
        if isinstance(member.get("multipleOf"), (int, float)):
            parts.append(f"a multiple of {member['multipleOf']}")
        for unit, low_key, high_key in (("characters", "minLength", "maxLength"), ("items", "minItems", "maxItems")):
            low_n, high_n = member.get(low_key), member.get(high_key)
            if low_n is not None and high_n is not None:
                parts.append(f"{low_n} to {high_n} {unit}" if low_n != high_n else f"exactly {low_n} {unit}")
            elif high_n is not None:
                parts.append(f"at most {high_n} {unit}")
            elif low_n:
                parts.append(f"at least {low_n} {unit}")
        if isinstance(member.get("pattern"), str):
            parts.append(f"matching the pattern {member['pattern']}")
    return ", ".join(dict.fromkeys(parts))


def placeholder(spec: Any, root: dict) -> Any:
    """A value of the field's type, for the example action in the instructions (within its bounds)."""
    if "default" in resolve(spec, root) and resolve(spec, root)["default"] is not None:
        return resolve(spec, root)["default"]
    allowed = choices(spec, root)
    if allowed:
        return allowed[0]
    member = options(spec, root)[0]
    found = member.get("type")
    if found in ("integer", "number"):
        low = member.get("minimum", member.get("exclusiveMinimum"))
        value = 0 if low is None else (low + 1 if "exclusiveMinimum" in member and "minimum" not in member else low)
        high = member.get("maximum", member.get("exclusiveMaximum"))
        value = value if high is None or value <= high else high
        return int(value) if found == "integer" else float(value)
    return {"string": "...", "boolean": False, "array": [], "object": {}}.get(found, None)


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
