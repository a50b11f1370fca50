"""The Task API clients against real chain_sum servers (openenv 0.4.1 and 0.10.0): every route and error path."""

from __future__ import annotations

import asyncio
import socket
from collections import Counter

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from client_hostile import TaskAPIProxy

from openenv_prime.client import (
    AsyncTaskAPIClient,
    InvalidRequestError,
    OpenEnvTimeoutError,
    RouteNotSupportedError,
    ServerError,
    ServerUnreachableError,
    TaskAPIClient,
    TaskIndexError,
    UnknownEnvironmentError,
    UnknownSplitError,
    load_sampler_tasks,
)
from openenv_prime.client.wire.taskapi import _Call, _TaskAPICore


def _run(coro, timeout: float = 60.0):
    return asyncio.run(asyncio.wait_for(coro, timeout))


def test_routes_answer_what_the_server_has(any_server):
    with TaskAPIClient(any_server) as api:
        assert api.list_environments() == ["chain_sum"]
        assert api.env_name == "chain_sum"  # resolved: the only environment listed
        splits = {s["name"]: s for s in api.splits()}
        assert set(splits) == {"train", "test"} and splits["train"]["type"] == "train"
        assert api.num_tasks("train") == 50_000 and api.num_tasks("test") == 1_000
        task = api.get_task("test", 777)
        assert (task["id"], task["tier"], task["split"], task["index"]) == ("chain_sum/test/t3/177", 3, "test", 777)
        assert [t["id"] for t in api.tasks("test")] == [t["id"] for t in api.get_task_range("test")]
        schema = api.schema()
        assert schema["action"]["properties"]["answer"]["type"] == "string"


def test_task_range_follows_slice_rules_across_pages(any_server):
    with TaskAPIClient(any_server) as api:
        every = api.get_task_range("test", page_size=333)  # pages of 333, 333, 333, 1
        assert [t["index"] for t in every] == list(range(1000))
        assert every == api.get_task_range("test")
        assert api.get_task_range("test", 195, 205, page_size=3) == every[195:205]
        assert api.get_task_range("test", -5) == every[-5:]
        assert api.get_task_range("test", 990, 5_000) == every[990:]
        assert api.get_task_range("test", 10, 3) == []
        assert api.get_task_range("test", None, -998) == every[:2]
        assert every[777] == api.get_task("test", 777)


def test_async_client_gives_the_same_answers(any_server):
    async def both():
        async with AsyncTaskAPIClient(any_server) as api:
            assert api.env_name is None
            assert await api.resolve_env_name() == "chain_sum" and api.env_name == "chain_sum"
            return (
                await api.list_environments(),
                await api.splits(),
                await api.num_tasks("test"),
                await api.get_task("test", 3),
                await api.get_task_range("test", 100, 900, page_size=64),
                await api.tasks("test"),
                await api.schema(),
            )

    with TaskAPIClient(any_server) as api:
        expected = (
            api.list_environments(),
            api.splits(),
            api.num_tasks("test"),
            api.get_task("test", 3),
            api.get_task_range("test", 100, 900),
            api.tasks("test"),
            api.schema(),
        )
    assert _run(both()) == expected


def test_ws_url_works_for_the_task_api(chain_sum_server):
    ws_url = chain_sum_server.replace("http://", "ws://") + "/ws"
    with TaskAPIClient(ws_url) as api:
        assert api.base_url == chain_sum_server
        assert api.num_tasks("test") == 1000


def test_unknown_environment_names_the_ones_served(any_server):
    with TaskAPIClient(any_server, env_name="chain_summ") as api:
        with pytest.raises(UnknownEnvironmentError, match=r"no environment 'chain_summ'.*serves \['chain_sum'\]") as err:
            api.splits()
        assert err.value.env_name == "chain_summ" and err.value.url == any_server

    async def async_case():
        async with AsyncTaskAPIClient(any_server, env_name="nope") as api:
            await api.get_task("test", 0)

    with pytest.raises(UnknownEnvironmentError, match="serves"):
        _run(async_case())


def test_env_name_is_case_insensitive_on_the_server(chain_sum_server):
    with TaskAPIClient(chain_sum_server, env_name="CHAIN_SUM") as api:
        assert api.num_tasks("test") == 1000


@pytest.mark.parametrize("call", ["num_tasks", "get_task", "get_task_range", "tasks"])
def test_unknown_split_lists_the_splits_that_exist(any_server, call):
    args = {"get_task": ("dev", 0)}.get(call, ("dev",))
    with TaskAPIClient(any_server) as api:
        with pytest.raises(UnknownSplitError, match=r"unknown split 'dev'.*\['test', 'train'\]"):
            getattr(api, call)(*args)
        assert api.num_tasks("test") == 1000  # the client is still fine


def test_index_out_of_range(any_server):
    with TaskAPIClient(any_server) as api:
        with pytest.raises(TaskIndexError, match=r"task index 1000 is out of range for split 'test'") as err:
            api.get_task("test", 1000)
        assert isinstance(err.value, IndexError)
        with pytest.raises(TaskIndexError):
            api.get_task("test", -1)
        with pytest.raises(TypeError, match="index must be an int"):
            api.get_task("test", "3")
        with pytest.raises(ValueError, match="page_size must be >= 1"):
            api.get_task_range("test", page_size=0)


def test_real_validation_error_maps_to_field_errors(chain_sum_server):
    """A body the server rejects (an extra field) becomes InvalidRequestError naming the field."""
    call = _Call("POST", "/chain_sum/task", {"split": "test", "index": 0, "shard": 1})
    response = httpx.post(chain_sum_server + call.path, json=call.body, timeout=10)
    assert response.status_code == 422
    core = _TaskAPICore(chain_sum_server, "chain_sum")
    with pytest.raises(InvalidRequestError, match="shard: Extra inputs are not permitted") as err:
        core.interpret(call, response)
    assert err.value.errors and err.value.errors[0]["type"] == "extra_forbidden"


def test_unknown_split_without_a_splits_route_ends_in_a_server_error(chain_sum_server):
    """With no /splits to check against, the client sends the call and reports the server's own verdict
    (openenv turns the environment's exception into a bare 500, or chain_sum answers 422 naming the split)."""
    with TaskAPIProxy(chain_sum_server, unsupported={"splits"}) as proxy, TaskAPIClient(proxy.url) as api:
        with pytest.raises(RouteNotSupportedError, match="not supported"):
            api.splits()
        assert api.num_tasks("test") == 1000
        with pytest.raises((ServerError, InvalidRequestError), match=r"HTTP 500|'dev'"):
            api.num_tasks("dev")
        assert sum(path.endswith("/splits") for _, path in proxy.seen) == 1  # the 501 is remembered


def test_501_fallbacks_use_tasks_when_it_lists_every_spec_and_len_of_tasks(chain_sum_server):
    with TaskAPIClient(chain_sum_server) as direct:
        expected = direct.get_task_range("test", 190, 215)
    with TaskAPIProxy(chain_sum_server, unsupported={"task_range", "num_tasks"}) as proxy:
        with TaskAPIClient(proxy.url) as api:
            assert api.num_tasks("test") == 1000  # len(/tasks)
            assert api.get_task_range("test", 190, 215, page_size=8) == expected
        assert ("POST", "/chain_sum/tasks") in proxy.seen
        assert sum(path == "/chain_sum/task" for _, path in proxy.seen) == 0  # /tasks had them all

        async def async_case():
            async with AsyncTaskAPIClient(proxy.url) as api:
                return await api.get_task_range("test", 190, 215)

        assert _run(async_case()) == expected


def test_501_task_range_falls_back_to_per_index_task_when_tasks_is_capped(chain_sum_server):
    with TaskAPIClient(chain_sum_server) as direct:
        expected = direct.get_task_range("train", 190, 215)
    with TaskAPIProxy(chain_sum_server, unsupported={"task_range"}) as proxy:
        with TaskAPIClient(proxy.url) as api:
            assert api.get_task_range("train", 190, 215, page_size=8) == expected  # /tasks holds 1000 of 50000
        assert sum(path == "/chain_sum/task" for _, path in proxy.seen) == 25


def test_action_schema_is_the_schemas_action_or_none_without_a_schema_route(chain_sum_server):
    with TaskAPIClient(chain_sum_server) as api:
        schema = api.action_schema()
        assert schema == api.schema()["action"] and "answer" in schema["properties"]
    with TaskAPIProxy(chain_sum_server, unsupported={"schema"}) as proxy, TaskAPIClient(proxy.url) as api:
        assert api.action_schema() is None

        async def async_case():
            async with AsyncTaskAPIClient(proxy.url) as async_api:
                return await async_api.action_schema()

        assert _run(async_case()) is None


def test_server_without_task_api_says_so(chain_sum_server):
    with TaskAPIProxy(chain_sum_server, missing=True) as proxy, TaskAPIClient(proxy.url) as api:
        with pytest.raises(RouteNotSupportedError, match="openenv >= 0.4.1"):
            api.list_environments()


def test_timeouts_are_retried_then_reported(chain_sum_server):
    with TaskAPIProxy(chain_sum_server, stall_first=1) as proxy:
        # 10 s per try: the stalled first try times out whatever the load; a retry's real answer arrives well within.
        with TaskAPIClient(proxy.url, env_name="chain_sum", timeout=10.0, retries=2) as api:
            assert api.list_environments() == ["chain_sum"]  # the first try was never answered: a retry answered
        assert proxy.seen.count(("GET", "/list_environments")) >= 2
    with TaskAPIProxy(chain_sum_server, stall_first=10) as proxy:
        with TaskAPIClient(proxy.url, env_name="chain_sum", timeout=0.3, retries=1) as api:
            with pytest.raises(OpenEnvTimeoutError, match="timed out 2 time"):
                api.list_environments()
        assert len(proxy.seen) == 2


def test_unreachable_server(chain_sum_server):
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # nothing listens here once the socket closes
    with TaskAPIClient(f"http://127.0.0.1:{port}", retries=1) as api:
        with pytest.raises(ServerUnreachableError, match=r"after 2 attempt.*openenv-prime serve"):
            api.splits()


def test_non_json_answer_is_a_clear_server_error(chain_sum_server):
    with TaskAPIProxy(chain_sum_server, garbage=True) as proxy, TaskAPIClient(proxy.url) as api:
        with pytest.raises(ServerError, match="not JSON"):
            api.list_environments()


def test_sampler_tasks_key_on_the_tier(chain_sum_server):
    with TaskAPIClient(chain_sum_server) as api:
        tasks = load_sampler_tasks(api, "train")
        assert len(tasks) == 50_000
        assert [t.index for t in tasks] == list(range(50_000))
        assert Counter(t.key for t in tasks) == {str(tier): 10_000 for tier in range(5)}
        assert all(t.key == str(t.spec["tier"]) and t.split == "train" for t in tasks[::997])
        with pytest.raises(ValueError, match="no family field 'difficulty'.*'tier'"):
            load_sampler_tasks(api, "test", family_field="difficulty")


_bound = st.one_of(st.none(), st.integers(-1_100, 1_100))


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(start=_bound, stop=_bound, page_size=st.integers(40, 700))
def test_paged_range_equals_the_slice_of_all_tasks(chain_sum_server, start, stop, page_size):
    global _ALL_TEST
    with TaskAPIClient(chain_sum_server) as api:
        if _ALL_TEST is None:
            _ALL_TEST = api.get_task_range("test")
        assert api.get_task_range("test", start, stop, page_size=page_size) == _ALL_TEST[start:stop]


_ALL_TEST: list | None = None
