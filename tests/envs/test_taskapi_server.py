"""Real servers of environments written without a Task API, wrapped: a plain one and an MCP one, with a
JSONL task list, a callable and seeds, under openenv 0.4.1 and 0.10.0.

openenv 0.4.1 (this interpreter) runs some in process (Starlette's TestClient, the same app) to keep the
module fast; each openenv 0.10.0 case and the `serve MODULE:CLASS --port 0` command run as real servers."""

import contextlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from websockets.sync.client import connect

from openenv_prime.envs.launch import PARENT_PID_VAR, ServerStartError, local_server
from tests.conftest import OPENENV010_PYTHON_VAR
from tests.envs.sample_envs import guess_tasks, secret_tasks
from tests.support.processes import free_port, serving
from tests.support.waiting import HANG_GUARD_S

ROOT = Path(__file__).resolve().parents[2]
GUESS = "tests.envs.sample_envs:GuessEnvironment"
SECRET = "tests.envs.sample_envs:SecretToolsEnvironment"
SEED_STRIDE = 1_000_000


def _python010() -> str:
    python = os.environ.get(OPENENV010_PYTHON_VAR)
    if not python:
        pytest.skip(f"{OPENENV010_PYTHON_VAR} is unset: no openenv 0.10.0 interpreter")
    return python


def _environ() -> dict:
    return dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))


class Wire:
    """HTTP and /ws of one server: a real one (URL) or an in-process app (TestClient)."""

    def __init__(self, http, socket_factory, name: str):
        self.http, self.socket, self.name = http, socket_factory, name

    @staticmethod
    def exchange(ws, message: dict) -> dict:
        ws.send(json.dumps(message))
        return json.loads(ws.recv(timeout=20))


class _TestClientSocket:
    def __init__(self, session):
        self.session = session

    def send(self, text: str) -> None:
        self.session.send_text(text)

    def recv(self, timeout=None) -> str:
        return self.session.receive_text()


@contextlib.contextmanager
def remote(url: str, name: str):
    with httpx.Client(base_url=url, timeout=30) as http:
        yield Wire(http, lambda: connect(url.replace("http://", "ws://") + "/ws", open_timeout=30), name)


@contextlib.contextmanager
def in_process(env_cls, tasks, name: str):
    sys.modules.setdefault("gradio", None)  # as the server does: openenv's web UI is not needed
    from fastapi.testclient import TestClient

    from openenv_prime.envs.taskapi import create_app_with_tasks

    with TestClient(create_app_with_tasks(env_cls, tasks)) as client:

        @contextlib.contextmanager
        def socket():
            with client.websocket_connect("/ws") as session:
                yield _TestClientSocket(session)

        yield Wire(client, socket, name)


@contextlib.contextmanager
def cli_server_041(tasks_file: Path, env: str = GUESS, *more: str):
    """`openenv-prime serve MODULE:NAME --tasks FILE --port 0`, its URL read from the printed line."""
    command = [sys.executable, "-m", "openenv_prime.cli", "serve", env, "--tasks", str(tasks_file), "--port", "0", *more]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=_environ())
    try:
        line = process.stdout.readline().strip()
        match = re.fullmatch(r"listening on (http://127\.0\.0\.1:(\d+))", line)
        assert match and int(match.group(2)) > 0, f"unexpected first line {line!r}"
        yield match.group(1)
    finally:
        process.terminate()
        process.wait(timeout=30)


@contextlib.contextmanager
def python_api_server_010(tmp_path: Path):
    """The Python API (`serve_with_tasks(EnvClass, callable)`) run by openenv 0.10.0's interpreter."""
    port = free_port()
    code = (
        "import sys; sys.modules.setdefault('gradio', None)  # skip openenv's web UI import, as the CLI does\n"
        "from openenv_prime.envs.serve import serve_with_tasks\n"
        "from tests.envs.sample_envs import GuessEnvironment, guess_tasks\n"
        f"serve_with_tasks(GuessEnvironment, guess_tasks, port={port})\n"
    )
    url = f"http://127.0.0.1:{port}"
    with serving([_python010(), "-c", code], f"{url}/health", tmp_path / "server.log", env=_environ()):
        yield url


@pytest.fixture(scope="module")
def tasks_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("tasks") / "guess.jsonl"
    path.write_text("".join(json.dumps(task) + "\n" for task in guess_tasks()))
    return path


@pytest.fixture(scope="module", params=["jsonl-cli-041", "jsonl-cli-010", "callable-api-010", "callable-041"])
def guess(request, tasks_file, tmp_path_factory):
    """GuessEnvironment (plain openenv Environment) wrapped with the tasks of `guess_tasks()`."""
    with contextlib.ExitStack() as stack:
        if request.param == "jsonl-cli-041":
            url = stack.enter_context(cli_server_041(tasks_file))
        elif request.param == "jsonl-cli-010":
            url = stack.enter_context(local_server(GUESS, tasks=tasks_file, python=_python010()))
        elif request.param == "callable-api-010":
            url = stack.enter_context(python_api_server_010(tmp_path_factory.mktemp("api")))
        else:
            from tests.envs.sample_envs import GuessEnvironment

            yield stack.enter_context(in_process(GuessEnvironment, guess_tasks, request.param))
            return
        yield stack.enter_context(remote(url, request.param))


@pytest.fixture(scope="module", params=["seeds-cli-010", "seeds-041", "callable-041"])
def secret(request):
    """SecretToolsEnvironment (an MCPEnvironment) wrapped with 3 seeds per split, or `secret_tasks()`."""
    from openenv_prime.envs.taskapi import SeedTasks

    if request.param == "seeds-cli-010":
        with local_server(SECRET, seeds=3, splits=["train", "test"], python=_python010()) as url, remote(url, request.param) as wire:
            yield wire
    else:
        from tests.envs.sample_envs import SecretToolsEnvironment

        tasks = SeedTasks(3) if request.param == "seeds-041" else secret_tasks
        with in_process(SecretToolsEnvironment, tasks, request.param) as wire:
            yield wire


def _specs(records):
    return [{k: v for k, v in r.items() if k != "reset"} for r in records]


def test_guess_task_api_serves_the_task_list(guess):
    http = guess.http
    assert http.get("/list_environments").json() == ["guess_env"]
    assert http.get("/guess_env/splits").json() == [
        {"name": "train", "type": "train", "num_tasks": 4}, {"name": "test", "type": "test", "num_tasks": 4},
    ]
    test_specs = _specs([t for t in guess_tasks() if t["split"] == "test"])
    assert http.post("/guess_env/num_tasks", json={"split": "test"}).json() == {"num_tasks": 4}
    assert http.post("/guess_env/task", json={"split": "test", "index": 2}).json() == {"task": test_specs[2]}
    assert http.post("/guess_env/task_range", json={"split": "test", "start": 1, "stop": 3}).json() == {"tasks": test_specs[1:3]}
    assert http.post("/guess_env/tasks", json={"split": "test"}).json()["tasks"] == test_specs


def test_guess_reset_by_split_and_index_plays_exactly_that_task(guess):
    for task in guess_tasks():
        split, index = task["split"], int(task["id"].split("-")[1])
        reset = task["reset"]
        target = (reset["seed"] * 7 + reset["level"]) % 100
        with guess.socket() as ws:
            obs = guess.exchange(ws, {"type": "reset", "data": {"split": split, "index": index, "episode_id": "e"}})
            assert (obs["data"]["observation"]["seed"], obs["data"]["observation"]["level"]) == (reset["seed"], reset["level"])
            assert guess.exchange(ws, {"type": "step", "data": {"guess": target}})["data"]["reward"] == 1.0
            guess.exchange(ws, {"type": "reset", "data": {"split": split, "index": index}})
            assert guess.exchange(ws, {"type": "step", "data": {"guess": target + 1}})["data"]["reward"] == 0.0


def test_guess_errors_unknown_split_422_bad_index_400_unknown_reset_argument(guess):
    http = guess.http
    for route, body in [("/guess_env/num_tasks", {"split": "dev"}), ("/guess_env/task", {"split": "dev", "index": 0})]:
        answer = http.post(route, json=body)
        assert answer.status_code == 422
        [error] = answer.json()["detail"]
        assert error["loc"] == ["body", "split"] and "known splits: train, test" in error["msg"]
    assert http.post("/guess_env/task", json={"split": "test", "index": 4}).status_code == 400
    assert http.post("/guess_env/task", json={"split": "test", "index": -1}).status_code == 400
    bad_index = http.post("/reset", json={"split": "test", "index": 9})
    assert bad_index.status_code == 400 and "out of range for split 'test' (0..3)" in bad_index.json()["detail"]
    unknown = http.post("/reset", json={"split": "test", "index": 0, "colour": "red"})
    assert unknown.status_code == 422 and unknown.json()["detail"][0]["loc"] == ["body", "colour"]
    with guess.socket() as ws:
        guess.exchange(ws, {"type": "reset", "data": {"split": "test", "index": 1}})
        for data, text in [({"split": "dev", "index": 0}, "known splits: train, test"), ({"split": "test", "index": 0, "colour": 1}, "unknown reset argument 'colour'")]:
            error = guess.exchange(ws, {"type": "reset", "data": data})
            assert error["type"] == "error" and error["data"]["code"] == "EXECUTION_ERROR" and text in error["data"]["message"]
        # the refused resets left the episode on test/1 (seed 11, level 1)
        assert guess.exchange(ws, {"type": "step", "data": {"guess": (11 * 7 + 1) % 100}})["data"]["reward"] == 1.0


def test_guess_schema_is_the_classes_own(guess):
    schema = guess.http.get("/schema").json()
    assert "guess" in schema["action"]["properties"] and "target_hint" in schema["observation"]["properties"]


def _secret_expectations(name: str) -> list[tuple[str, int, dict]]:
    if name.startswith("seeds"):
        return [(split, i, {"seed": k * SEED_STRIDE + i}) for k, split in enumerate(("train", "test")) for i in range(3)]
    return [("test", i, task["reset"]) for i, task in enumerate(secret_tasks())]


def test_mcp_environment_plays_the_task_and_keeps_its_tools(secret):
    for split, index, reset in _secret_expectations(secret.name):
        spec = secret.http.post("/secret_tools_env/task", json={"split": split, "index": index}).json()["task"]
        assert spec["split"] == split and "reset" not in spec
        with secret.socket() as ws:
            obs = secret.exchange(ws, {"type": "reset", "data": {"split": split, "index": index}})["data"]["observation"]
            assert obs["metadata"]["reset_kwargs"] == reset
            tools = secret.exchange(ws, {"type": "step", "data": {"type": "list_tools"}})["data"]["observation"]["tools"]
            assert sorted(t["name"] for t in tools) == ["echo", "secret"]
            call = {"type": "call_tool", "tool_name": "secret", "arguments": {}}
            result = secret.exchange(ws, {"type": "step", "data": call})["data"]["observation"]["result"]
            assert result["data"] == reset["seed"] + reset.get("bonus", 0)


def test_mcp_environment_errors(secret):
    assert secret.http.post("/secret_tools_env/task", json={"split": "dev", "index": 0}).status_code == 422
    assert secret.http.post("/secret_tools_env/task", json={"split": "test", "index": 3}).status_code == 400
    with secret.socket() as ws:
        first = _secret_expectations(secret.name)[-1]
        conflict = secret.exchange(ws, {"type": "reset", "data": {"split": first[0], "index": first[1], "seed": 5}})
        assert conflict["type"] == "error" and "leave seed out" in conflict["data"]["message"]


@pytest.mark.parametrize(
    "args, message",
    [
        ([GUESS], "pass exactly one of --tasks FILE.jsonl or --tasks-per-split N"),
        ([GUESS, "--seeds", "3", "--tiers", "2"], "--tiers does not apply to MODULE:CLASS"),
        ([GUESS, "--tasks", "{missing}"], "no such file"),
        (["nope"], "unknown environment 'nope'; use one of chain-sum, reasoning-gym, imported or MODULE:CLASS"),
        (["chain-sum", "--datasets", "leg_counting"], "--datasets does not apply to chain-sum"),
        (["reasoning-gym", "--datasets", "leg_counting", "--schedule", "interleaved"], "--schedule does not apply to reasoning-gym"),
        (["reasoning-gym"], "--datasets is required"),
        (["reasoning-gym", "--datasets", "leg_counting", "--test-size", "0"], "--test-size must be an integer from 1"),
        (["reasoning-gym", "--datasets", "leg_counting,composite"], "'composite' registers no curriculum"),
        (["imported"], "name the package directory `openenv import` made"),
        (["imported", "{missing}", "--tiers", "2"], "--tiers does not apply to imported"),
        (["chain-sum", "{missing}"], "unexpected argument"),
    ],
)
def test_serve_refuses_bad_arguments_with_a_message_naming_them(args, message, tmp_path):
    """Each of these fails before openenv is imported, so each run is quick; the rest are checked in process."""
    args = [a.format(missing=tmp_path / "missing.jsonl") for a in args]
    done = subprocess.run(
        [sys.executable, "-m", "openenv_prime.envs", "serve", *args, "--port", "0"],
        capture_output=True, text=True, timeout=HANG_GUARD_S, env={**_environ(), PARENT_PID_VAR: ""},
    )
    assert done.returncode != 0 and re.search(message, done.stderr), done.stderr[-2000:]


@pytest.mark.parametrize(
    "env, options, message",
    [
        ("tests.envs.sample_envs:NoArgsEnvironment", {"max_sessions": 4}, "does not set SUPPORTS_CONCURRENT_SESSIONS = True.*use --max-sessions 1"),
        ("tests.envs.sample_envs:Missing", {}, "has no attribute 'Missing'"),
        (GUESS, {"env_kwargs": {"colour": "red"}}, r"cannot construct GuessEnvironment\(colour='red'\)"),
        (GUESS, {"session_timeout": 0}, "--session-timeout must be positive"),
    ],
)
def test_create_app_refuses_what_it_cannot_serve(env, options, message):
    sys.modules.setdefault("gradio", None)
    from openenv_prime.envs.taskapi import create_app_with_tasks

    with pytest.raises(ValueError, match=message):
        create_app_with_tasks(env, lambda: [{"reset": {}}], **options)


def test_serve_takes_a_function_returning_the_environment_for_a_constructor_that_needs_python_objects(tasks_file):
    """finrl_env's constructor takes a class and a DataFrame config: served through a function that returns it."""
    sys.modules.setdefault("gradio", None)
    from openenv_prime.envs.taskapi import create_app_with_tasks

    with pytest.raises(ValueError, match=r"cannot construct ConfiguredEnvironment\(\)"):  # the class alone cannot be built
        create_app_with_tasks("tests.envs.sample_envs:ConfiguredEnvironment", guess_tasks)
    with pytest.raises(TypeError, match="is not an openenv Environment subclass"):
        create_app_with_tasks("tests.envs.sample_envs:not_an_environment", guess_tasks)
    task = guess_tasks()[0]
    offset = 3 + 2  # the function's market class (3) and its shift, from --env-kwargs
    target = (task["reset"]["seed"] * 7 + task["reset"]["level"] + offset) % 100
    with cli_server_041(tasks_file, "tests.envs.sample_envs:configured_environment", "--env-kwargs", '{"shift": 2}') as url:
        with remote(url, "function") as wire, wire.socket() as ws:
            assert wire.http.get("/list_environments").json() == ["configured_env"]
            index = int(task["id"].split("-")[1])
            wire.exchange(ws, {"type": "reset", "data": {"split": task["split"], "index": index}})
            assert wire.exchange(ws, {"type": "step", "data": {"guess": target}})["data"]["reward"] == 1.0


def test_local_server_reports_a_refused_class_with_the_servers_message():
    with pytest.raises(ServerStartError, match=r"(?s)exited with code 1.*does not take it"):
        with local_server("tests.envs.sample_envs:NoArgsEnvironment", seeds=2):
            pass
