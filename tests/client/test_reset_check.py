"""The reset check on servers built here (tests/client/reset_check_server.py, and the task-ignoring servers of
tests/support/partial_task_api_server.py), under openenv 0.4.1 and 0.10.0: a constructor RNG passes, a reset that
ignores split/index fails with the differing field and both values, an ignored seed warns."""

from __future__ import annotations

import asyncio
import os
import re
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from openenv_prime.client import EpisodeSession, open_task_source
from openenv_prime.client.tasks.resetcheck import ResetIgnoredError, check_reset_plays_tasks, check_reset_plays_tasks_sync, first_difference
from openenv_prime.client.tasks.tasklist import parse_task_list
from tests.conftest import OPENENV010_PYTHON_VAR
from tests.support.processes import free_port, serving

SERVER = Path(__file__).with_name("reset_check_server.py")
KINDS = ("constructor-rng", "hidden-seed", "shown-seed")


@pytest.fixture(scope="module", params=["openenv-0.4.1", "openenv-0.10.0"])
def reset_servers(request, tmp_path_factory):
    """``{kind: base_url}`` of reset_check_server.py's environments, served with the Task API."""
    python = sys.executable
    if request.param == "openenv-0.10.0":
        python = os.environ.get(OPENENV010_PYTHON_VAR) or pytest.skip(f"{OPENENV010_PYTHON_VAR} is unset: no openenv 0.10.0 interpreter")
    port = free_port()
    root = f"http://127.0.0.1:{port}"
    log = tmp_path_factory.mktemp("reset-check-servers") / "server.log"
    environ = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(SERVER.parents[2]), os.environ.get("PYTHONPATH")])))
    with serving([python, str(SERVER), str(port)], f"{root}/{KINDS[0]}/health", log, env=environ):
        yield {kind: f"{root}/{kind}" for kind in KINDS}


def seed_list(seeds=range(1, 5), key: str = "seed"):
    return parse_task_list([f'{{"split": "test", "id": "t{s}", "reset": {{"{key}": {s}}}}}' for s in seeds], source="mine.jsonl")


async def _boards_in_one_session(url: str) -> list[list[int]]:
    async with EpisodeSession(url) as session:
        return [(await session.reset(split="test", index=0)).observation["board"] for _ in range(2)]


def test_an_rng_made_in_the_constructor_passes(reset_servers):
    """A second reset in one session plays another board (what the old one-socket check refused), fresh sessions agree."""
    url = reset_servers["constructor-rng"]
    first, second = asyncio.run(_boards_in_one_session(url))
    assert first != second
    with open_task_source(url) as source:
        assert check_reset_plays_tasks_sync(url, source, "test", 3) is None


def test_a_reset_that_ignores_split_and_index_fails_showing_the_differing_field(partial_servers):
    url = partial_servers["ignores-reset"]
    with open_task_source(url) as source, pytest.raises(ResetIgnoredError) as caught:
        check_reset_plays_tasks_sync(url, source, "test", 6)
    text = str(caught.value)
    shown = re.search(r'observation field `prompt` was "Reply with the number (\d+)\." then "Reply with the number (\d+)\."', text)
    assert shown is not None and shown.group(1) != shown.group(2), text
    assert "two fresh sessions" in text and "played index 6, which split 'test' does not have (6 tasks)" in text
    assert "its reset ignores ['index', 'split']" in text and url in text
    assert "openenv-prime serve MODULE:CLASS --tasks" in text and "--tasks FILE.jsonl" in text


def test_a_reset_that_always_plays_one_task_fails_once_it_plays_an_index_past_the_end(partial_servers):
    url = partial_servers["constant-reset"]
    with open_task_source(url) as source, pytest.raises(ResetIgnoredError) as caught:
        check_reset_plays_tasks_sync(url, source, "test", 6)
    text = str(caught.value)
    assert "tasks 0, 1, 2 of split 'test'" in text and "showed the same observation and state" in text
    assert "played index 6" in text and "its reset ignores ['index', 'split']" in text


def test_a_seed_taken_and_ignored_with_the_draw_in_the_state_warns(reset_servers):
    """TextArena's shape: the same task plays another secret in every fresh session; only the state shows it."""
    url = reset_servers["hidden-seed"]
    with open_task_source(url) as source:
        note = asyncio.run(check_reset_plays_tasks(url, source, "test", 4))  # the trainer's async entry point
    assert note is not None and url in note
    assert re.search(r"state field `secret` was (\d+) then (\d+), while the observations agreed", note)
    assert "non-determinism" in note and "--no-reset-check" in note and "check_reset = false" in note
    assert "openenv-prime serve" not in note  # it is served that way already
    assert "given seed=1 (task 0's) and played two different games" in note  # the spec names the seed
    with open_task_source(url, tasks=seed_list(), env_name="hidden") as listed:
        note = check_reset_plays_tasks_sync(url, listed, "test", 4)
    assert note is not None and "given seed=1 (task 0's) and played two different games" in note


def test_a_shown_draw_on_a_server_that_reads_the_index_warns_as_the_environments_own(reset_servers):
    url = reset_servers["shown-seed"]
    with open_task_source(url) as source:
        note = check_reset_plays_tasks_sync(url, source, "test", 4)
    assert note is not None
    assert re.search(r"observation field `board\[2\]` was (\d+) then (\d+)", note), note
    assert "does play the task it is asked for (it refused index 4" in note and "environment's own non-determinism" in note
    assert "openenv-prime serve" not in note


def test_a_task_list_of_seeds_on_a_random_environment_warns_and_of_other_arguments_fails(reset_servers):
    url = reset_servers["shown-seed"]
    with open_task_source(url, tasks=seed_list(), env_name="shown") as source:
        note = check_reset_plays_tasks_sync(url, source, "test", 4)
    assert note is not None and "given seed=1 (task 0's) and played two different games" in note and "`board[2]`" in note
    with open_task_source(url, tasks=seed_list(key="level"), env_name="shown") as source, pytest.raises(ResetIgnoredError) as caught:
        check_reset_plays_tasks_sync(url, source, "test", 4)
    text = str(caught.value)
    assert "`board[2]`" in text and "does not take ['level'] (openenv drops them) or it is random beyond them" in text
    assert "--no-reset-check" in text and "mine.jsonl" in text


def test_different_seeds_showing_the_same_start_warn_that_the_seed_may_be_ignored(partial_servers):
    url = partial_servers["constant-reset"]  # reset(seed) takes a seed and always plays the first task
    with open_task_source(url, tasks=seed_list(range(1, 7)), env_name="say") as source:
        note = check_reset_plays_tasks_sync(url, source, "test", 6)
    assert note is not None and "tasks 0, 1, 2 of split 'test' (reset with {'seed': 1}, {'seed': 2}, {'seed': 3})" in note
    assert "the environment may ignore its seed" in note and "mine.jsonl" in note


def test_the_warning_names_the_callers_own_way_to_skip_the_check(partial_servers):
    url = partial_servers["constant-reset"]
    with open_task_source(url, tasks=seed_list(range(1, 7)), env_name="say") as source:
        note = check_reset_plays_tasks_sync(url, source, "test", 6, skip_setting="environment.check_reset = false")
    assert note is not None and note.endswith("environment.check_reset = false skips this check")
    assert "--no-reset-check" not in note


# ---- the differing field, without a server -----------------------------------------------------------------
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=3), inner, max_size=4),
    max_leaves=12,
)


@given(json_values)
def test_a_value_has_no_difference_with_itself(value):
    assert first_difference(value, value) is None


@given(st.dictionaries(st.sampled_from("abcdef"), st.integers(), min_size=1), st.data())
def test_the_changed_key_is_the_one_named(values, data):
    key = data.draw(st.sampled_from(sorted(values)))
    changed = {**values, key: values[key] + 1}
    found = first_difference({"obs": values}, {"obs": changed})
    assert (found.path, found.first, found.second) == (f"obs.{key}", values[key], values[key] + 1)


def test_differences_in_lists_long_strings_and_missing_fields_show_both_values():
    assert first_difference({"grid": [0] * 1024}, {"grid": [0] * 17 + [2] + [0] * 1006}).describe() == "`grid[17]` was 0 then 2"
    long_a, long_b = "x" * 300 + "secret 7 here" + "y" * 300, "x" * 300 + "secret 9 here" + "y" * 300
    text = first_difference({"prompt": long_a}, {"prompt": long_b}).describe()
    assert "secret 7" in text and "secret 9" in text and len(text) < 260
    assert first_difference({"a": 1}, {"a": 1, "b": [2]}).describe() == "`b` was absent then [2]"
    assert first_difference([1, 2], [1, 2, 3]).describe() == "`[2]` was absent then 3"


def test_an_episode_id_the_environment_draws_itself_is_no_difference():
    """calendar_env puts a fresh UUID in its reset metadata whatever episode_id it is given: not a random task."""
    from openenv_prime.client.tasks.resetcheck import _Start, _start_difference

    def start(uuid: str, text: str) -> _Start:
        return _Start(0, {}, {"text": text, "metadata": {"episode_id": uuid, "tools": 3}}, {"episode_id": uuid})

    assert _start_difference(start("a1", "hi"), start("b2", "hi")) is None
    where, difference = _start_difference(start("a1", "hi"), start("b2", "ho"))
    assert (where, difference.path) == ("observation", "text")
