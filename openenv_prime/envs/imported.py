"""Serve a package made by openenv 0.10.0's ``openenv import`` (a verifiers or an ORS environment wrapped as an OpenEnv
environment): ``openenv-prime serve imported PACKAGE_DIR``.

Such a package already has a Task API of its own (``list_splits``, ``list_tasks``, ``num_tasks``, ``get_task``,
``get_task_range``), resets with ``split`` + ``index`` (or ``task_spec``) and acts through MCP tools, so it needs no
task list from us. Its generated ``server/app.py`` cannot serve a verifiers environment under plain uvicorn, though:
the wrapper calls ``load_environment`` in every new environment instance (openenv builds one per Task API request and
per ``/ws`` session) from a worker thread, and verifiers' legacy ``Environment`` installs SIGINT/SIGTERM handlers as
it is built, which only the main thread may do ("signal only works in main thread"), so ``/splits`` answers 500.
Here the environment is loaded once, in the main thread, before serving, and every instance shares it, as verifiers'
own servers do (``--env-kwargs`` become ``load_environment``'s arguments). An ORS package is served as generated.
Everything else (the classes, MCP tools, the session limit of a wrapper without ``SUPPORTS_CONCURRENT_SESSIONS``)
is the package's own.
"""

from __future__ import annotations

import importlib
import inspect
import sys
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

KINDS = {"_LOAD_ENVIRONMENT": "verifiers", "_ORIGINAL_ENV_CLASS": "ors"}
"""The module global each generated wrapper defines, and the source kind it marks."""


@dataclass(frozen=True)
class ImportedPackage:
    name: str
    """The package's (and the environment's) name: the routes are ``/NAME/...``."""
    kind: str
    """"verifiers" or "ors"."""
    module: ModuleType
    """``NAME.server.NAME_environment``, the generated wrapper."""
    env_cls: type


def load_package(package_dir: str | Path) -> ImportedPackage:
    """Import the wrapper of a package made by ``openenv import``; ValueError says why a directory is not one."""
    root = Path(package_dir).expanduser().resolve()
    name = root.name
    wrapper = root / "server" / f"{name}_environment.py"
    if not wrapper.is_file():
        raise ValueError(
            f"{root} is not a package made by `openenv import`: it has no server/{name}_environment.py "
            "(pass the directory `openenv import --output-dir D --name N` made, D/N)"
        )
    if str(root.parent) not in sys.path:
        sys.path.insert(0, str(root.parent))
    try:
        module = importlib.import_module(f"{name}.server.{name}_environment")
    except Exception as error:
        raise ValueError(
            f"cannot import {wrapper}: {error!r}; install what the source environment needs in this interpreter "
            f"({', '.join(_dependencies(root)) or 'see its pyproject.toml'})"
        ) from error
    kind = next((kind for marker, kind in KINDS.items() if hasattr(module, marker)), None)
    from openenv.core.env_server.interfaces import Environment

    classes = [c for _, c in inspect.getmembers(module, inspect.isclass)
               if issubclass(c, Environment) and c.__module__ == module.__name__]
    if kind is None or len(classes) != 1:
        raise ValueError(
            f"{wrapper} is not a wrapper openenv 0.10.0's importers write (a verifiers or ORS environment): "
            f"it defines {'none' if kind is None else kind} of their markers and {len(classes)} Environment classes"
        )
    return ImportedPackage(name, kind, module, classes[0])


def _dependencies(root: Path) -> list[str]:
    """The generated pyproject's dependencies (the source's own, as `openenv import` copied them), openenv's left out."""
    import tomllib

    try:
        project = tomllib.loads((root / "pyproject.toml").read_text()).get("project", {})
    except (OSError, ValueError):
        return []
    return [dep for dep in project.get("dependencies", []) if not dep.replace("-", "_").startswith(("openenv", "openenv_"))]


def load_verifiers_once(package: ImportedPackage, env_kwargs: dict[str, Any] | None = None) -> Any:
    """Call ``load_environment`` now, in this (the main) thread, and make every instance of the wrapper use it."""
    module = package.module
    if env_kwargs:
        loaded = module._call_vendored(module._LOAD_ENVIRONMENT, **env_kwargs)
    else:
        loaded = module._load_environment()
    module._load_environment = lambda: loaded
    return loaded


def create_imported_app(
    package_dir: str | Path,
    *,
    env_kwargs: dict[str, Any] | None = None,
    max_sessions: int | None = None,
    session_timeout: float | None = None,
):
    """The FastAPI app for an imported package (routes ``/NAME/...``); a broken package raises ValueError now, not
    in the first request: its splits are listed once before serving."""
    from openenv.core.env_server.http_server import create_app
    from openenv.core.env_server.mcp_types import CallToolAction, CallToolObservation

    from openenv_prime.envs.taskapi.app import concurrency_config, kwargs_text

    package = load_package(package_dir)
    if package.kind == "verifiers":
        try:
            load_verifiers_once(package, env_kwargs)
        except Exception as error:
            raise ValueError(f"load_environment({kwargs_text(env_kwargs)}) of {package.name} failed: {error!r}") from error
    elif env_kwargs:
        raise ValueError("--env-kwargs are load_environment's arguments; an ORS environment takes none")
    concurrency = concurrency_config(package.env_cls, max_sessions, session_timeout)
    try:
        env = package.env_cls()
        env.list_splits()
        env.close()
    except Exception as error:
        raise ValueError(f"{package.env_cls.__qualname__} of {package.name} cannot list its splits: {error!r}") from error
    return create_app(package.env_cls, CallToolAction, CallToolObservation, env_name=package.name,
                      concurrency_config=concurrency)
