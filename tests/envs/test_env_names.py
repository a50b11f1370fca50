"""A served environment is named after its package (the folder holding its server/), the class as the fallback."""

from __future__ import annotations

import json
import sys

import httpx
import pytest

from openenv_prime.envs.launch import local_server
from openenv_prime.envs.taskapi.classes import load_class
from openenv_prime.envs.taskapi.naming import class_env_name, env_name_for, package_env_name

ENVIRONMENT_PY = """
from tests.envs.sample_envs import GuessEnvironment


class TextArenaEnvironment(GuessEnvironment):
    '''Named like OpenEnv's textarena class, whose name alone would give text_arena_env.'''
"""


@pytest.mark.parametrize(
    "module, expected",
    [
        ("envs.textarena_env.server.environment", "textarena_env"),  # an OpenEnv checkout
        ("textarena_env.server.environment", "textarena_env"),  # the package installed
        ("envs.openspiel_env.server.openspiel_environment", "openspiel_env"),
        ("envs.kernrl.server.kernel_env", "kernrl"),  # the package, whatever it ends with
        ("my_game_env.environment", "my_game_env"),  # no server/ folder: a package named *_env
        ("tests.envs.sample_envs", None),  # neither: the class names it
        ("my_module", None),
    ],
)
def test_the_package_names_the_environment(module, expected):
    assert package_env_name(module) == expected


@pytest.mark.parametrize(
    "name, expected",
    [("GridWorldEnvironment", "grid_world_env"), ("EchoEnvironment", "echo_env"), ("Connect4Environment", "connect4_env"),
     ("MazeEnv", "maze_env"), ("TextArenaEnvironment", "text_arena_env")],
)
def test_outside_a_package_the_class_names_it_openenvs_way(name, expected):
    assert class_env_name(type(name, (), {})) == expected
    assert env_name_for(type(name, (), {"__module__": "tests.envs.sample_envs"})) == expected


def _checkout(tmp_path):
    package = tmp_path / "checkout" / "envs" / "textarena_env" / "server"
    package.mkdir(parents=True)
    (package / "environment.py").write_text(ENVIRONMENT_PY)
    return tmp_path / "checkout"


def test_a_class_run_from_inside_its_package_folder_is_named_after_the_folder(tmp_path):
    folder = _checkout(tmp_path) / "envs" / "textarena_env"
    try:
        env_cls = load_class("server.environment:TextArenaEnvironment", [folder])
        assert env_name_for(env_cls) == "textarena_env"
    finally:
        for name in ("server.environment", "server"):
            sys.modules.pop(name, None)
        sys.path.remove(str(folder))


def test_served_from_a_checkout_it_answers_to_its_package_name(tmp_path):
    checkout = _checkout(tmp_path)
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text(json.dumps({"split": "test", "id": "t0", "reset": {"seed": 1}}) + "\n")
    with local_server("envs.textarena_env.server.environment:TextArenaEnvironment", tasks=tasks, paths=[checkout]) as url:
        assert httpx.get(f"{url}/list_environments").json() == ["textarena_env"]
        assert httpx.post(f"{url}/textarena_env/num_tasks", json={"split": "test"}).json() == {"num_tasks": 1}
