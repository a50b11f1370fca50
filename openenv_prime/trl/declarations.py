"""A tool as TRL reads it: a Python function whose signature types the arguments and whose docstring's ``Args:``
describes them (``transformers.utils.get_json_schema``, which TRL's chat template renders into the prompt).

The tools of :mod:`.tools` (an action schema's fields) and :mod:`.mcp_tools` (an MCP environment's listed tools)
are declared here from JSON schemas: a field's JSON type becomes its Python type, its allowed values a ``Literal``,
and a field that is not required defaults to None.
"""

from __future__ import annotations

import inspect
import keyword
import re
from dataclasses import dataclass
from typing import Any, Callable, Collection, Literal

from openenv_prime.client.prompts import schema as js

_TYPES = {"string": str, "integer": int, "number": float, "boolean": bool, "array": list, "object": dict}


@dataclass(frozen=True)
class Argument:
    """One declared argument: its Python name, type, whether a call needs it, and its ``Args:`` text."""

    name: str
    hint: Any
    required: bool
    text: str


def declare(function: Callable, name: str, summary: str, arguments: list[Argument]) -> Callable:
    """``function`` (taking ``self`` and keyword arguments) named ``name``, with the signature and docstring TRL
    reads its tool schema from."""
    params = [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    annotations: dict[str, Any] = {}
    for argument in arguments:
        hint = argument.hint if argument.required else argument.hint | None
        annotations[argument.name] = hint
        params.append(inspect.Parameter(argument.name, inspect.Parameter.KEYWORD_ONLY, annotation=hint,
                                        **({} if argument.required else {"default": None})))
    annotations["return"] = str
    lines = [f"    {argument.name}: {' '.join(argument.text.split())}" for argument in arguments]
    described = " ".join(summary.split())
    function.__name__ = function.__qualname__ = name
    function.__doc__ = (f"{described}\n\n" + ("Args:\n" + "\n".join(lines) + "\n\n" if lines else "")
                        + "Returns:\n    The environment's next observation.")
    function.__signature__ = inspect.Signature(params, return_annotation=str)
    function.__annotations__ = annotations
    return function


def hint(spec: dict, root: dict) -> Any:
    """The Python type of a JSON schema field: ``Literal`` of its allowed values, else its JSON type's."""
    allowed = js.choices(spec, root)
    if allowed is not None:
        return Literal[tuple(allowed)]
    return _TYPES.get(js.kind(spec, root) or "string", str)


def field_text(field: str, spec: dict, root: dict, shorten: Callable[[str], str] | None = None, *,
               whose: str = "") -> str:
    """A field's description (``shorten`` applied) and limits on one line; "The {whose}{field}." when it has no
    description."""
    described = " ".join((js.resolve(spec, root).get("description") or f"The {whose}{field}.").split())
    limits = js.bounds(spec, root)
    described = shorten(described) if shorten is not None else described
    return f"{described} ({limits})" if limits else described


def python_name(text: str, taken: Collection[str] = frozenset(), *, lower: bool = False, prefix: str = "arg",
                reserved: Collection[str] = frozenset()) -> str:
    """``text`` as a Python identifier that is no keyword and not in ``taken`` (``from`` -> ``from_``,
    ``start-date`` -> ``start_date``, a second ``name`` -> ``name_2``); one in ``reserved``, or one that would start
    with a digit, gets ``prefix`` (``reset`` -> ``call_reset``)."""
    kept = "".join(c if f"a{c}".isidentifier() else " " for c in text)  # "²" is a word character, no name's
    name = re.sub(r"\s+", "_", kept.strip()).strip("_")
    name = name.lower() if lower else name
    if not name[:1].isidentifier() or name in reserved:  # empty, or starting with a digit or a "·"
        name = f"{prefix}_{name}".rstrip("_")
    if keyword.iskeyword(name) or name == "self":
        name += "_"
    unique, n = name, 2
    while unique in taken:
        unique, n = f"{name}_{n}", n + 1
    return unique
