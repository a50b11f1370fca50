"""The name a served environment goes by in the Task API routes (``/NAME/...``) and in task keys.

An OpenEnv environment calls itself after its package, the folder that holds its ``server/``
(``envs/textarena_env/server/environment.py`` is ``textarena_env``, installed or in a checkout), and its own
app passes that name to openenv. So the package names it: the module path's part before ``server``, else a
part ending in ``_env``. Only a class outside such a package is named after the class, OpenEnv's way
(``GridWorldEnvironment`` -> ``grid_world_env``), since ``TextArenaEnvironment`` -> ``text_arena_env`` is a
name the environment does not answer to anywhere else.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

_SERVER = "server"


def env_name_for(env_cls: type) -> str:
    """The package's name when the class lives in one (see the module docstring), else the class-derived name."""
    return package_env_name(env_cls.__module__) or class_env_name(env_cls)


def package_env_name(module: str) -> str | None:
    """``envs.textarena_env.server.environment`` -> ``textarena_env``; ``my_game_env.environment`` -> ``my_game_env``;
    ``server.app`` (run from inside the package's folder) -> that folder's name; None when no part names a package."""
    parts = module.split(".")
    if _SERVER in parts[1:]:
        return parts[parts.index(_SERVER, 1) - 1]
    if parts[0] == _SERVER and len(parts) > 1:
        return _folder_holding_server(module)
    return next((part for part in reversed(parts[:-1]) if part.endswith("_env")), None)


def class_env_name(env_cls: type) -> str:
    """OpenEnv's naming from the class: GridWorldEnvironment -> grid_world_env, EchoEnvironment -> echo_env."""
    stem = re.sub(r"(Environment|Env)$", "", env_cls.__name__) or env_cls.__name__
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", stem).lower() + "_env"


def _folder_holding_server(module: str) -> str | None:
    loaded = sys.modules.get(module)
    path = getattr(loaded, "__file__", None)
    if not path:
        return None
    server = next((p for p in Path(path).resolve().parents if p.name == _SERVER), None)
    return server.parent.name if server is not None and server.parent.name.isidentifier() else None
