"""docs/architecture.md's import rules, checked on every module's imports (function-level ones included)."""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.waiting import HANG_GUARD_S

PACKAGE = Path(__file__).resolve().parents[1] / "openenv_prime"

# framework -> the only place (a package folder or one module) allowed to import it
HOMES = {
    "openenv": ["envs/"],
    "reasoning_gym": ["envs/"],
    "uvicorn": ["envs/"],
    "fastapi": ["envs/"],
    "verifiers": ["verifiers_taskset/"],
    "prime_rl": ["prime_rl_adapter/sampler.py"],
    "mlx": ["mlx_trainer/"],
    "mlx_lm": ["mlx_trainer/"],
    "trl": ["trl/"],
    "torch": ["trl/"],
    "peft": ["trl/"],
    "datasets": ["trl/", "evaluation/dataset.py"],
    # the MLX trainer writes its tokenizer files with transformers' tokenizer class, which mlx-lm loads them with
    "transformers": ["trl/", "mlx_trainer/model/"],
    # the MLX trainer's report_to: its log mirrored to TensorBoard and W&B
    "tensorboardX": ["mlx_trainer/report/trackers.py"],
    "wandb": ["mlx_trainer/report/trackers.py"],
}
CLIENT_THIRD_PARTY = {"httpx", "websockets", "pydantic", "jsonschema"}


def modules() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def import_statements(path: Path) -> list[tuple[str, list[str]]]:
    """Every import anywhere in ``path`` (in functions and under ``if TYPE_CHECKING:`` too) as (the absolute module
    name, the names ``from`` it imports, or [] for ``import X``); relative imports resolved against its package."""
    package = path.relative_to(PACKAGE.parent).with_suffix("").parts[:-1]
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found += [(alias.name, []) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = ".".join(package[: len(package) - node.level + 1])
                module = f"{base}.{node.module}" if node.module else base
            else:
                module = node.module
            found.append((module, [alias.name for alias in node.names]))
    return found


def imports(path: Path) -> set[str]:
    """Absolute module names imported anywhere in ``path``."""
    return {module for module, _ in import_statements(path)}


def where(path: Path) -> str:
    return path.relative_to(PACKAGE).as_posix()


@pytest.mark.parametrize("path", modules(), ids=where)
def test_frameworks_are_imported_only_at_home(path):
    for name in imports(path):
        top = name.split(".")[0]
        if top in HOMES:
            assert any(where(path).startswith(home) for home in HOMES[top]), (
                f"openenv_prime/{where(path)} imports {name}; only {HOMES[top]} may (docs/architecture.md)"
            )


@pytest.mark.parametrize("path", [p for p in modules() if where(p).startswith("samplers/")], ids=where)
def test_samplers_import_only_the_standard_library(path):
    for name in imports(path):
        top = name.split(".")[0]
        ok = top in sys.stdlib_module_names or top == "__future__" or name.startswith("openenv_prime.samplers")
        assert ok, f"openenv_prime/{where(path)} imports {name}: samplers use the standard library only"


@pytest.mark.parametrize("path", [p for p in modules() if where(p).startswith("testing/")], ids=where)
def test_test_doubles_import_only_the_standard_library(path):
    """openenv_prime.testing is imported by tests, benchmarks and patches alike: it must cost nothing to import."""
    for name in imports(path):
        top = name.split(".")[0]
        ok = top in sys.stdlib_module_names or top == "__future__" or name.startswith("openenv_prime.testing")
        assert ok, f"openenv_prime/{where(path)} imports {name}: the test doubles use the standard library only"


@pytest.mark.parametrize("path", [p for p in modules() if where(p).startswith("client/")], ids=where)
def test_client_imports_only_its_wire_libraries(path):
    for name in imports(path):
        top = name.split(".")[0]
        ok = (
            top in sys.stdlib_module_names or top == "__future__" or top in CLIENT_THIRD_PARTY
            or name.startswith(("openenv_prime.client", "openenv_prime.samplers"))
        )
        assert ok, f"openenv_prime/{where(path)} imports {name}: the client uses httpx, websockets, pydantic and jsonschema only"


# The client's rooms (docs/architecture.md): what each may import of the rest of the client. The wire is the floor:
# it knows nothing of tasks, prompts or episodes. The engine plays the reset arguments it is handed, so it never needs
# where tasks come from; setup.py, above the rooms, joins tasks and prompts for the consumers.
CLIENT_ROOMS = {
    "client/wire/": ("openenv_prime.client.wire",),
    "client/tasks/": ("openenv_prime.client.wire", "openenv_prime.client.tasks"),
    "client/prompts/": ("openenv_prime.client.wire", "openenv_prime.client.prompts"),
    "client/engine/": ("openenv_prime.client.wire", "openenv_prime.client.prompts", "openenv_prime.client.engine"),
}


@pytest.mark.parametrize("path", [p for p in modules() if where(p).startswith(tuple(CLIENT_ROOMS))], ids=where)
def test_client_rooms_import_only_the_rooms_below(path):
    allowed = next(v for k, v in CLIENT_ROOMS.items() if where(path).startswith(k))
    for name in imports(path):
        if name.startswith("openenv_prime.client"):
            assert name.startswith(allowed), (
                f"openenv_prime/{where(path)} imports {name}; that folder may use only {allowed} of the client "
                "(docs/architecture.md)"
            )


def test_the_client_is_its_rooms_and_setup():
    """A new client module goes into the room of its job, not beside them: beside them are only the setup path every
    consumer takes and the server settings it reads."""
    loose = sorted(where(p) for p in modules() if where(p).startswith("client/") and where(p).count("/") == 1)
    assert loose == ["client/__init__.py", "client/server_settings.py", "client/setup.py"], loose
    assert all(any(where(p).startswith(room) for p in modules()) for room in CLIENT_ROOMS)


@pytest.mark.parametrize("path", [p for p in modules() if not where(p).startswith("envs/")], ids=where)
def test_servers_are_reached_only_through_the_launcher(path):
    """Outside envs/, only the subprocess launcher (which imports no openenv) may be imported from envs."""
    for name in imports(path):
        if name.startswith("openenv_prime.envs"):
            assert name in ("openenv_prime.envs", "openenv_prime.envs.launch"), (
                f"openenv_prime/{where(path)} imports {name}; outside envs/ use openenv_prime.envs.launch only"
            )


# What each trainer integration may import of the package: the core (samplers, client, evaluation), never another
# integration or the servers (docs/architecture.md).
INTEGRATION_MAY_IMPORT = {
    "trl/": ("openenv_prime.trl", "openenv_prime.samplers", "openenv_prime.client", "openenv_prime.evaluation",
             "openenv_prime.pretrained"),
}


@pytest.mark.parametrize("path", [p for p in modules() if where(p).startswith(tuple(INTEGRATION_MAY_IMPORT))], ids=where)
def test_integrations_meet_the_core_only(path):
    allowed = next(v for k, v in INTEGRATION_MAY_IMPORT.items() if where(path).startswith(k))
    for name in imports(path):
        if name.startswith("openenv_prime"):
            assert name.startswith(allowed), f"openenv_prime/{where(path)} imports {name}; it may use only {allowed}"


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph() -> dict[str, set[str]]:
    """Each module of the package -> the package's modules it imports (``from P import m`` is module ``P.m`` when
    there is one, else ``P``), type-checking imports included."""
    names = {module_name(path): path for path in modules()}
    graph = {}
    for name, path in names.items():
        found = set()
        for module, imported in import_statements(path):
            submodules = {f"{module}.{n}" for n in imported} & names.keys()
            found |= submodules
            if len(submodules) < len(imported) or not imported:
                found.add(module)
        graph[name] = (found & names.keys()) - {name}
    return graph


def test_no_two_modules_import_each_other():
    """A circle of two modules (even one closed by an ``if TYPE_CHECKING:`` import) is one job in two places: move the
    part that needs the other module to where that module's job is (the engine starts a wave of episodes on the wire's
    session pool, the pool only keeps sockets)."""
    graph = import_graph()
    circles = sorted({tuple(sorted((a, b))) for a, imported in graph.items() for b in imported if a in graph[b]})
    assert not circles, f"modules that import each other: {circles}"
    # guards against a check that passes because it saw nothing: a type-checking import, and a `from P import m`
    assert "openenv_prime.client.tasks.tasks" in graph["openenv_prime.client.tasks.splits"]
    assert "openenv_prime.client.prompts.mcp" in graph["openenv_prime.client.prompts.render"]


def test_where_the_pretrained_model_lives_is_standard_library_only():
    for name in imports(PACKAGE / "pretrained.py"):
        assert name.split(".")[0] in sys.stdlib_module_names or name == "__future__", name


# The MLX trainer's rooms (docs/architecture.md): what each folder may import from the rest of the trainer.
TRAINER_ROOMS = {
    "mlx_trainer/model/": ("openenv_prime.mlx_trainer.model",),
    "mlx_trainer/report/": ("openenv_prime.mlx_trainer.report",),
    "mlx_trainer/rollouts/": ("openenv_prime.mlx_trainer.rollouts", "openenv_prime.mlx_trainer.worker"),
}


@pytest.mark.parametrize("path", [p for p in modules() if where(p).startswith(tuple(TRAINER_ROOMS))], ids=where)
def test_trainer_rooms_import_only_what_their_job_needs(path):
    allowed = next(v for k, v in TRAINER_ROOMS.items() if where(path).startswith(k))
    for name in imports(path):
        if name.startswith("openenv_prime.mlx_trainer"):
            assert name.startswith(allowed), (
                f"openenv_prime/{where(path)} imports {name}; that folder may use only {allowed} of the trainer "
                "(docs/architecture.md)"
            )


def test_help_imports_no_framework():
    """`openenv-prime --help` builds every subcommand's parser and imports no framework (docs/architecture.md)."""
    probe = (
        "import json, sys\n"
        "from openenv_prime.cli import build_parser\n"
        "import openenv_prime.mlx_trainer, openenv_prime.mlx_trainer.model, openenv_prime.mlx_trainer.report\n"
        "import openenv_prime.mlx_trainer.training, openenv_prime.mlx_trainer.rollouts\n"
        "build_parser().format_help()\n"
        "print(json.dumps(sorted({m.split('.')[0] for m in sys.modules})))\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=HANG_GUARD_S, check=True)
    heavy = set(json.loads(done.stdout.splitlines()[-1])) & (set(HOMES) | {"matplotlib", "torch", "transformers", "numpy"})
    assert not heavy, f"openenv-prime --help imported {sorted(heavy)}"


def test_the_rules_see_the_package():
    """Guards against a rule that passes because it found nothing to check."""
    assert len(modules()) > 40
    assert "prime_rl" in {n.split(".")[0] for n in imports(PACKAGE / "prime_rl_adapter" / "sampler.py")}


# Names defined at the top level of more than one module that mean the same thing in each, and why.
SAME_MEANING = {
    "__getattr__": "the module attribute hook (PEP 562) of each lazily importing package",
    "main": "a module's command-line entry point",
    "register": "each CLI module adds its subcommand to the parser it is given",
    "_EXPORTS": "each lazily importing package's map of the names it exports to their modules",
}
CONSTANT = re.compile(r"_?[A-Z][A-Z0-9_]+")


def top_level_names(tree: ast.Module) -> list[str]:
    """Classes and functions (underscore ones are module-internal), and constants (UPPER_CASE, underscore ones too:
    two modules' ``_TIER_STRIDE`` with different values read as one number)."""
    names = []
    for node in tree.body:
        if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            if not (node.name.startswith("_") and not node.name.startswith("__")):
                names.append(node.name)
        else:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []
            names += [t.id for t in targets if isinstance(t, ast.Name) and CONSTANT.fullmatch(t.id)]
    return names


def test_no_name_is_defined_in_two_modules():
    """A class, function or constant name means one thing in openenv_prime/ (e.g. `TaskSource` is the client's
    interface; the servers' task sources are `TaskProvider`s; `SAMPLER_STATE_VERSION` and `CHECKPOINT_VERSION` are two
    layouts, one inside the other)."""
    defined: dict[str, list[str]] = {}
    for path in modules():
        for name in top_level_names(ast.parse(path.read_text())):
            defined.setdefault(name, []).append(where(path))
    repeated = {name: paths for name, paths in defined.items() if len(paths) > 1 and name not in SAME_MEANING}
    assert not repeated, f"names defined in more than one module (rename one, or add it to SAME_MEANING with why): {repeated}"
    assert {"TaskSource", "TaskListSource", "TaskIndexError", "EpisodeRules", "SAMPLER_STATE_VERSION"} <= set(defined)
    assert set(SAME_MEANING) <= {name for name, paths in defined.items() if len(paths) > 1}, "SAME_MEANING lists a name no longer repeated"


def test_a_module_name_means_one_thing():
    """`taskset.py` is the verifiers Taskset; the reasoning-gym server's task layout is `layout.py`."""
    named = [where(path) for path in modules() if path.name == "taskset.py"]
    assert named == ["verifiers_taskset/taskset.py"]
