"""Task sources on real OpenEnv servers with a partial Task API, none (a task list drives it), or a reset that
ignores the task (tests/support/partial_task_api_server.py, under openenv 0.4.1 and 0.10.0)."""

from __future__ import annotations

import asyncio
import re

import pytest

from openenv_prime.client import EpisodeSession, RouteNotSupportedError, TaskAPIClient, open_task_source
from openenv_prime.client.tasks.resetcheck import ResetIgnoredError, check_reset_plays_tasks_sync
from openenv_prime.client.tasks.tasklist import parse_task_list
from openenv_prime.client.tasks.tasks import NO_FAMILY, load_sampler_tasks
from tests.support.partial_task_api_server import TASKS, seed_task_lines


def seed_task_list(split: str = "test"):
    """Tasks of the no-task-api server: reset(seed=s) plays the number 10 + s."""
    return parse_task_list(seed_task_lines(split), source="seeds.jsonl")


async def _prompts(url: str, kwargs_list: list[dict]) -> list[str]:
    async with EpisodeSession(url) as session:
        return [(await session.reset(**kwargs)).observation["prompt"] for kwargs in kwargs_list]


@pytest.mark.parametrize("kind", ["list-tasks-only", "no-splits"])
def test_partial_task_api_loads_every_spec_and_resets_play_them(partial_servers, kind):
    url = partial_servers[kind]
    with open_task_source(url) as source:
        tasks = load_sampler_tasks(source, "test", family_field="level")
        assert source.kind == "task api" and source.env_name == "say"
        assert [dict(t.spec) for t in tasks] == TASKS
        assert [t.key for t in tasks] == [str(spec["level"]) for spec in TASKS]
        assert source.reset_kwargs("test", 4) == {"split": "test", "index": 4}
        assert check_reset_plays_tasks_sync(url, source, "test", len(tasks)) is None
        kwargs = [source.reset_kwargs("test", t.index) for t in tasks]
    prompts = asyncio.run(_prompts(url, kwargs))
    assert prompts == [f"Reply with the number {spec['target']}." for spec in TASKS]


def test_without_list_splits_the_source_says_so_and_a_named_split_still_loads(partial_servers):
    with TaskAPIClient(partial_servers["no-splits"]) as api:
        with pytest.raises(RouteNotSupportedError, match="splits"):
            api.splits()
        assert api.get_task_range("test", 2, 5) == TASKS[2:5]
        assert api.num_tasks("test") == 6


def test_list_tasks_only_server_loads_from_tasks_without_per_index_calls(partial_servers):
    with TaskAPIClient(partial_servers["list-tasks-only"]) as api:
        assert api.num_tasks("test") == 6
        assert api.get_task_range("test", 1, 4, page_size=2) == TASKS[1:4]  # /task would answer 501


def test_task_list_drives_a_server_without_task_api(partial_servers):
    url = partial_servers["no-task-api"]
    with open_task_source(url) as api_source, pytest.raises(RouteNotSupportedError, match=r"--tasks FILE\.jsonl"):
        load_sampler_tasks(api_source, "test")
    with open_task_source(url, tasks=seed_task_list()) as source:
        assert (source.kind, source.env_name, source.where) == ("task list", "say", "seeds.jsonl")
        tasks = load_sampler_tasks(source, "test", family_field="level")
        assert [t.spec["id"] for t in tasks] == [f"seed-{s}" for s in range(1, 7)]
        assert [t.key for t in tasks] == [str((10 + s) % 2) for s in range(1, 7)]
        assert check_reset_plays_tasks_sync(url, source, "test", len(tasks)) is None
        kwargs = [source.reset_kwargs(t.split, t.index) for t in tasks]
    assert kwargs == [{"seed": s} for s in range(1, 7)]
    assert asyncio.run(_prompts(url, kwargs)) == [f"Reply with the number {10 + s}." for s in range(1, 7)]
    no_family = load_sampler_tasks(open_task_source(url, tasks=seed_task_list(), env_name="x"), "test", family_field=None)
    assert {t.key for t in no_family} == {NO_FAMILY}


def test_missing_family_field_names_the_setting_and_the_source(partial_servers):
    with open_task_source(partial_servers["no-task-api"], tasks=seed_task_list(), env_name="say") as source:
        with pytest.raises(ValueError, match=r"task list seeds\.jsonl.*no family field 'tier'.*\['id', 'level', 'split'\].*set --family-field"):
            load_sampler_tasks(source, "test", family_field="tier", family_setting="--family-field")


def test_task_list_with_reset_arguments_the_environment_drops_is_a_warning(partial_servers):
    url = partial_servers["no-task-api"]
    misspelt = parse_task_list(['{"reset": {"sed": 1}}', '{"reset": {"sed": 2}}'], source="typo.jsonl")
    with open_task_source(url, tasks=misspelt, env_name="say") as source:
        note = check_reset_plays_tasks_sync(url, source, "train", 2)
    assert note is not None and "may ignore ['sed']" in note and "typo.jsonl" in note


def test_state_echoing_another_task_is_an_error():
    """A server whose state says which task it plays: a mismatch is proof, not a guess (chain_sum's state does)."""
    from openenv_prime.client.tasks.resetcheck import _check_echo
    from openenv_prime.client.tasks.tasks import TaskListSource

    source = TaskListSource(seed_task_list(), "say")
    _check_echo("http://h:1", source, {"seed": 3}, {"task": {"seed": 3}}, {"seed": 3, "step_count": 0})
    with pytest.raises(ResetIgnoredError, match=r"after reset with seed=3 the state says seed=4.*\[url http://h:1\]"):
        _check_echo("http://h:1", source, {"seed": 3}, {}, {"seed": 4})
    with pytest.raises(ResetIgnoredError, match=r"the observation's task says index=0"):
        _check_echo("http://h:1", source, {"split": "test", "index": 2}, {"task": {"index": 0}}, None)


def test_task_list_names_its_environment_without_asking_a_server_when_told():
    from tests.support.processes import free_port

    dead = f"http://127.0.0.1:{free_port()}"
    with open_task_source(dead, tasks=seed_task_list(), env_name="say") as source:  # nothing is contacted
        assert source.env_name == "say" and len(source.specs("test")) == 6
    from openenv_prime.client import ServerUnreachableError

    with pytest.raises(ServerUnreachableError, match=re.escape(dead)):
        open_task_source(dead, tasks=seed_task_list())  # asks /list_environments for the name
