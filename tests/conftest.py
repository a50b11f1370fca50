"""Shared fixtures: real chain_sum OpenEnv servers on 127.0.0.1 (ephemeral ports), one per test session."""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, settings

from openenv_prime.envs.launch import local_server
from tests.support.processes import server_python

OPENENV010_PYTHON_VAR = "OPENENV_PRIME_OPENENV010_PYTHON"

# Hypothesis times each example (a 200 ms deadline) and each data generation (the too_slow health check): speed
# thresholds that fail on a loaded machine. Tests assert behaviour; speed is measured in benchmarks/.
settings.register_profile("no-time-limits", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("no-time-limits")


@pytest.fixture(scope="session")
def chain_sum_server():
    """Base URL (http://127.0.0.1:PORT) of a chain_sum server: 5 lockstep tiers, at most 64 sessions."""
    with local_server("chain-sum", tiers=5, max_sessions=64, python=server_python()) as url:
        yield url


@pytest.fixture(scope="session")
def chain_sum_server_openenv010():
    """The same server run by openenv 0.10.0's interpreter (set OPENENV_PRIME_OPENENV010_PYTHON)."""
    python = os.environ.get(OPENENV010_PYTHON_VAR)
    if not python:
        pytest.skip(f"{OPENENV010_PYTHON_VAR} is unset: no openenv 0.10.0 interpreter to serve chain_sum")
    with local_server("chain-sum", tiers=5, max_sessions=64, python=python) as url:
        yield url


@pytest.fixture(scope="session")
def spend_server(tmp_path_factory):
    """Base URL of tests/support/spend_server.py: every step reports its cost in `metadata["service_spend"]`
    (see tests/support/spend_tasks.py), served by $OPENENV_PRIME_SERVER_PYTHON or this interpreter."""
    from tests.support.spend_tasks import spend_server as serving_spend

    with serving_spend(tmp_path_factory.mktemp("spend") / "server.log") as url:
        yield url


@pytest.fixture(scope="session", params=["openenv-0.4.1", "openenv-0.10.0"])
def partial_servers(request, tmp_path_factory):
    """``{kind: base_url}`` of the servers in tests/support/partial_task_api_server.py (a partial Task API, none,
    or a reset that ignores the task), once under this venv's openenv 0.4.1 and once under openenv 0.10.0."""
    import sys
    from pathlib import Path

    from tests.support.partial_task_api_server import KINDS
    from tests.support.processes import free_port, serving

    python = sys.executable
    if request.param == "openenv-0.10.0":
        python = os.environ.get(OPENENV010_PYTHON_VAR) or pytest.skip(f"{OPENENV010_PYTHON_VAR} is unset: no openenv 0.10.0 interpreter")
    script = Path(__file__).parent / "support" / "partial_task_api_server.py"
    port = free_port()
    root = f"http://127.0.0.1:{port}"
    log = tmp_path_factory.mktemp("partial-servers") / "server.log"
    with serving([python, str(script), str(port)], f"{root}/{KINDS[0]}/health", log):
        yield {kind: f"{root}/{kind}" for kind in KINDS}


# scripts/test runs pytest-xdist workers with `--dist loadgroup`: a session fixture is set up once per worker that
# uses it, a module fixture once per worker that runs one of the module's tests. Tests sharing one of these costly
# fixtures (servers started, a model converted, environments put through `openenv import`) therefore go to one
# worker, and so do a module's tests when they share a module fixture; every other test goes to whichever worker
# is free.
ONE_WORKER_FIXTURES = ("partial_servers", "play_servers", "smollm2_cache_dir", "imported_packages")


@pytest.hookimpl(tryfirst=True)  # before xdist's own hook reads the groups
def pytest_collection_modifyitems(config, items):
    for item in items:
        names = getattr(item, "fixturenames", ())
        group = next((name for name in ONE_WORKER_FIXTURES if name in names), None)
        if group is None and _uses_a_module_fixture(item):
            group = item.nodeid.split("::")[0]
        if group is not None:
            item.add_marker(pytest.mark.xdist_group(group))


def pytest_configure(config):
    """pytest 9.2 keeps node ids where pytest-xdist 3.8's `--dist loadgroup` cannot add the group to them, so it
    would silently send every test anywhere and each worker would start every costly fixture (pytest-xdist#1386)."""
    from importlib.metadata import version

    if config.getoption("dist", "no") != "loadgroup" or hasattr(config, "workerinput"):
        return
    release = tuple(int(part) for part in version("pytest").split(".")[:2])
    if release >= (9, 2) and version("pytest-xdist") in {"3.6.0", "3.6.1", "3.7.0", "3.8.0"}:
        raise pytest.UsageError(f"pytest {version('pytest')} with pytest-xdist {version('pytest-xdist')} loses "
                                "`--dist loadgroup`'s groups (pytest-xdist#1386): install the pytest that "
                                "pyproject.toml's dev extra allows (scripts/setup does), or run with -n 0")


def _uses_a_module_fixture(item) -> bool:
    info = getattr(item, "_fixtureinfo", None)
    defs = info.name2fixturedefs.values() if info is not None else ()
    return any(d.scope in ("module", "class", "package") for chain in defs for d in chain)
