"""local_server and `openenv-prime serve`: ephemeral ports, clear start-up errors, capacity, clean shutdown."""

import json
import socket
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect

from openenv_prime.envs.launch import ServerStartError, local_server
from tests.support.waiting import HANG_GUARD_S
from tests.support.waiting import until


def test_unknown_environment_is_rejected_before_starting_anything():
    with pytest.raises(ValueError, match="unknown environment 'nope'; local_server can start: chain-sum"):
        with local_server("nope"):
            pass


def test_bad_arguments_fail_fast_with_the_servers_message():
    with pytest.raises(ServerStartError, match=r"(?s)exited with code 1.*--tiers must be an integer from 1 to 10"):
        with local_server(tiers=11):
            pass


def test_a_busy_port_is_reported():
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen(1)
        port = busy.getsockname()[1]
        with pytest.raises(ServerStartError, match=f"cannot bind 127.0.0.1:{port}"):
            with local_server(port=port):
                pass


def _accepted(ws_url: str) -> bool:
    """Whether a new socket gets a session (a refused one gets CAPACITY_REACHED and is closed)."""
    with connect(ws_url, open_timeout=20) as ws:
        try:
            ws.send(json.dumps({"type": "state"}))
            return json.loads(ws.recv(timeout=20))["type"] == "state"
        except ConnectionClosed:
            return False


def test_interleaved_server_caps_sockets_reaps_idle_ones_and_stops_on_exit():
    with local_server(tiers=10, schedule="interleaved", max_sessions=2, session_timeout=1) as url:
        splits = httpx.get(f"{url}/chain_sum/splits", timeout=20).json()
        assert [s["num_tiers"] for s in splits] == [10, 10]
        ws_url = url.replace("http://", "ws://") + "/ws"
        with connect(ws_url, open_timeout=20) as first, connect(ws_url, open_timeout=20) as second:
            for ws in (first, second):
                ws.send(json.dumps({"type": "reset", "data": {"split": "test", "index": 1999}}))
                assert json.loads(ws.recv(timeout=20))["data"]["observation"]["task"]["num_terms"] == 7
            with connect(ws_url, open_timeout=20) as third:
                refused = json.loads(third.recv(timeout=20))
                assert refused["data"]["code"] == "CAPACITY_REACHED" and refused["data"]["max_sessions"] == 2
            # both sockets stay open but idle: the reaper (every 5 s) frees their slots
            until(lambda: _accepted(ws_url), "the reaper to free the idle sessions' slots", interval=1)
    with pytest.raises(httpx.ConnectError):
        httpx.get(f"{url}/health", timeout=5)


def test_cli_help_and_launcher_do_not_import_openenv():
    code = (
        "import sys; import openenv_prime.envs.cli, openenv_prime.envs.launch; "
        "assert not any(m == 'openenv' or m.startswith('openenv.') for m in sys.modules), 'openenv imported'"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=HANG_GUARD_S)
    help_text = subprocess.run(
        [sys.executable, "-m", "openenv_prime.envs", "serve", "--help"], check=True, timeout=HANG_GUARD_S, capture_output=True, text=True
    ).stdout
    assert "--max-sessions" in help_text and "chain-sum" in help_text


def test_server_stops_when_its_parent_is_killed():
    parent = subprocess.Popen(
        [
            sys.executable, "-c",
            "import time; from openenv_prime.envs.launch import local_server\n"
            "with local_server() as url:\n    print(url, flush=True); time.sleep(600)",
        ],
        stdout=subprocess.PIPE, text=True,
    )
    try:
        url = parent.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:")
        assert httpx.get(f"{url}/health", timeout=10).status_code == 200
    finally:
        parent.kill()  # SIGKILL: local_server gets no chance to stop the server
        parent.wait(timeout=30)
    until(lambda: _refused(f"{url}/health"), f"the server at {url} to stop after its parent was killed", interval=0.5)


def _refused(url: str) -> bool:
    try:
        httpx.get(url, timeout=2)
    except httpx.ConnectError:
        return True
    except httpx.TimeoutException:  # still there, answering slowly (a loaded machine): not stopped yet
        pass
    return False


def test_openenv_prime_cli_registers_serve_with_the_documented_defaults():
    from openenv_prime.cli import build_parser

    args = build_parser().parse_args(["serve", "chain-sum"])
    # None: chain-sum takes 5 lockstep tiers and 64 sessions (a MODULE:CLASS without concurrency gets 1)
    assert (args.host, args.port, args.tiers, args.schedule, args.max_sessions) == ("127.0.0.1", 8000, None, None, None)
    assert callable(args.func)


APP_PY = """
import os
from fastapi import FastAPI

app = FastAPI()


@app.get("/health")
def health():
    return {"status": "healthy"}


@app.get("/greeting")
def greeting():
    print("greeted", flush=True)
    return {"greeting": os.environ["COMPAT_GREETING"]}
"""


def test_local_app_serves_an_app_as_it_is_with_its_environment_and_keeps_its_log(tmp_path):
    from openenv_prime.envs.launch import local_app

    (tmp_path / "own_app_module.py").write_text(APP_PY)
    log = tmp_path / "server.log"
    with local_app("own_app_module:app", paths=[tmp_path], environ={"COMPAT_GREETING": "hello"}, log_file=log) as url:
        assert httpx.get(f"{url}/greeting").json() == {"greeting": "hello"}
    assert "greeted" in log.read_text()
    with pytest.raises(ServerStartError, match=r"(?s)exited with code.*no_such_app_module"):
        with local_app("no_such_app_module:app", paths=[tmp_path]):
            pass
    with pytest.raises(ValueError, match="expected MODULE:ATTRIBUTE"):
        with local_app("own_app_module"):
            pass


# Two OpenEnv-checkout apps, reduced to their imports: one imports its own package by name (as coding_env and
# textarena_env do), one relatively with a standalone fallback (as echo_env does).
CHECKOUT_APPS = {
    "named_env": "from named_env.server.greeting import GREETING\n",
    "relative_env": "try:\n    from ..greeting import GREETING\nexcept ImportError:\n    from greeting import GREETING\n",
}
CHECKOUT_APP_PY = """
from fastapi import FastAPI

app = FastAPI()


@app.get("/health")
def health():
    return {"status": "healthy", "greeting": GREETING}
"""


def test_the_docs_command_serves_an_openenv_checkouts_own_apps_from_its_root(tmp_path):
    """docs/openenv.md: from the checkout's root, `PYTHONPATH=envs uvicorn X.server.app:app` (the `envs.X...` form
    fails for an app that imports its own package by name)."""
    from openenv_prime.envs.launch import local_app

    docs = (Path(__file__).resolve().parents[2] / "docs" / "openenv.md").read_text()
    assert "`PYTHONPATH=envs uvicorn X.server.app:app --port 8000`" in docs and "`uvicorn envs.X.server.app:app`" in docs
    for name, imports in CHECKOUT_APPS.items():
        server = tmp_path / "envs" / name / "server"
        server.mkdir(parents=True)
        (server / "greeting.py").write_text(f"GREETING = {name!r}\n")
        (server.parent / "greeting.py").write_text(f"GREETING = {name!r}\n")
        (server / "app.py").write_text(imports + CHECKOUT_APP_PY)
        for init in (server.parent / "__init__.py", server / "__init__.py"):
            init.write_text("")
    for name in CHECKOUT_APPS:
        with local_app(f"{name}.server.app:app", paths=[tmp_path / "envs"]) as url:
            assert httpx.get(f"{url}/health").json()["greeting"] == name
    with local_app("envs.relative_env.server.app:app", paths=[tmp_path]) as url:
        assert httpx.get(f"{url}/health").json()["greeting"] == "relative_env"
    with pytest.raises(ServerStartError, match="No module named 'named_env'"):
        with local_app("envs.named_env.server.app:app", paths=[tmp_path]):
            pass
