"""Find the classes `create_app` needs for an environment class: import `MODULE:CLASS` (or `MODULE:FUNCTION`, a
function that returns the environment), infer its action, observation and state classes.

An environment written for OpenEnv names them in one of four places, tried in this order: the
generic parameters of its base (`class Env(Environment[MyAction, MyObservation, MyState])`), the
annotations of `step` (``def step(self, action: MyAction) -> MyObservation``) and `reset`/`state`, the
one such class its module imports (OpenEnv's connect4 annotates no return type but imports exactly one
observation class; not for the state class, which openenv 0.10 validates `/state` answers against), or, for an `MCPEnvironment`, openenv's own `CallToolAction`/`CallToolObservation`
(what OpenEnv's MCP servers pass). Explicit classes always win; when none is found the error names the
flag to pass.
"""

from __future__ import annotations

import importlib
import inspect
import os
import sys
import typing
from typing import Any, Sequence

from openenv.core.env_server.types import Action, Observation, State


def load_class(spec: str, paths: Sequence[str | os.PathLike[str]] = ()) -> type:
    """Import ``"package.module:Class"`` (``Class`` may be dotted), with `paths` put first on sys.path.

    For an environment in a checkout, pass the folder that makes its package importable, e.g. an OpenEnv
    checkout's root for ``envs.grid_world_env.server.grid_world_environment:GridWorldEnvironment``."""
    target = load_object(spec, paths)
    if not isinstance(target, type):
        raise ValueError(f"{spec!r} is a {type(target).__name__}, not a class")
    return target


def load_environment(spec: str, paths: Sequence[str | os.PathLike[str]] = ()) -> Any:
    """Import ``"MODULE:NAME"``: an environment class, or a function that returns an environment (for a class whose
    constructor takes Python objects, as finrl_env's takes a class and a DataFrame config)."""
    target = load_object(spec, paths)
    if not callable(target):
        raise ValueError(f"{spec!r} is a {type(target).__name__}, not an environment class or a function returning one")
    return target


def load_object(spec: str, paths: Sequence[str | os.PathLike[str]] = ()) -> Any:
    """What ``"package.module:NAME"`` names (:func:`load_class`'s import, for any object)."""
    module_name, sep, attribute = spec.partition(":")
    if not sep or not module_name or not attribute:
        raise ValueError(f"expected MODULE:CLASS (e.g. my_env.server.environment:MyEnvironment), got {spec!r}")
    for path in reversed([os.fspath(p) for p in paths]):
        if not os.path.isdir(path):
            raise ValueError(f"--path {path!r} is not a directory")
        if path not in sys.path:
            sys.path.insert(0, path)
    try:
        target: Any = importlib.import_module(module_name)
    except ImportError as error:
        missing = getattr(error, "name", None) or ""
        if missing and not (module_name == missing or module_name.startswith(missing + ".")):
            hint = f"the module itself was found, but it imports {missing!r}: install the package that provides it"
        else:
            hint = "put the folder its package lives under on --path (or PYTHONPATH)"
        raise ValueError(f"cannot import module {module_name!r} for {spec!r}: {error}; {hint}") from error
    for part in attribute.split("."):
        if not hasattr(target, part):
            raise ValueError(f"module {module_name!r} has no attribute {attribute!r} (from {spec!r})")
        target = getattr(target, part)
    return target


def _strict_subclass(candidate: Any, base: type) -> bool:
    return isinstance(candidate, type) and issubclass(candidate, base) and candidate is not base


def _generic_args(env_cls: type) -> list[Any]:
    """The type arguments of every parametrised base, nearest first, e.g. [MyAction, MyObservation, MyState]."""
    return [arg for klass in env_cls.__mro__ for base in klass.__dict__.get("__orig_bases__", ()) for arg in typing.get_args(base)]


def _hints(function: Any) -> dict[str, Any]:
    function = getattr(function, "fget", function)
    try:
        return typing.get_type_hints(function)
    except Exception:  # forward references that do not resolve: use what is a class already
        return {k: v for k, v in getattr(function, "__annotations__", {}).items() if isinstance(v, type)}


def _first_parameter_hint(function: Any) -> Any:
    params = [p for p in inspect.signature(function).parameters.values() if p.name != "self"]
    return _hints(function).get(params[0].name) if params else None


def infer_classes(env_cls: type) -> tuple[type | None, type | None, type | None]:
    """(action class, observation class, state class) as far as `env_cls` names them; None where it does not."""
    args = _generic_args(env_cls)
    candidates = {
        Action: [*args, _first_parameter_hint(env_cls.step)],
        Observation: [*args, _hints(env_cls.step).get("return"), _hints(env_cls.reset).get("return")],
        State: [*args, _hints(env_cls.state).get("return")],
    }
    found = {base: next((c for c in found if _strict_subclass(c, base)), None) for base, found in candidates.items()}
    try:
        from openenv.core.env_server.mcp_environment import MCPEnvironment
        from openenv.core.env_server.mcp_types import CallToolAction, CallToolObservation

        mcp_defaults = {Action: CallToolAction, Observation: CallToolObservation}
    except ImportError:  # an openenv without MCP support
        MCPEnvironment, mcp_defaults = None, {}
    namespace = vars(sys.modules[env_cls.__module__]) if env_cls.__module__ in sys.modules else {}
    for base in (Action, Observation):  # not State: openenv 0.10 validates /state answers against it, so no guessing
        if found[base] is not None:
            continue
        if MCPEnvironment is not None and issubclass(env_cls, MCPEnvironment) and base in mcp_defaults:
            found[base] = mcp_defaults[base]
            continue
        in_module = {value for value in namespace.values() if _strict_subclass(value, base)}
        if len(in_module) == 1:  # the one such class the class's module imports
            found[base] = in_module.pop()
    return found[Action], found[Observation], found[State]


def resolve_classes(
    env_cls: type, action_cls: type | None = None, observation_cls: type | None = None
) -> tuple[type, type, type | None]:
    """Explicit classes, else inferred ones; an error naming --action/--observation when neither exists."""
    action, observation, state = infer_classes(env_cls)
    action, observation = action_cls or action, observation_cls or observation
    for name, flag, value, base in (("action", "--action", action, Action), ("observation", "--observation", observation, Observation)):
        if value is None:
            raise ValueError(
                f"cannot tell the {name} class of {env_cls.__qualname__}: neither its base's type arguments, its "
                f"step/reset annotations nor its module's imports name one openenv {base.__name__} subclass; pass {flag} MODULE:CLASS "
                f"({name}_cls= in Python)"
            )
        if not _strict_subclass(value, base):
            raise ValueError(f"{flag} {value!r} is not a subclass of openenv's {base.__name__}")
    return action, observation, state
