"""Loading tasks from a real chain_sum server's Task API, and verifiers finding the taskset."""

from __future__ import annotations

import socket
import subprocess
import sys
import warnings

import pytest
from hypothesis import given
from hypothesis import strategies as st

from openenv_prime.client import TaskAPIClient
from openenv_prime.client.wire.errors import OpenEnvError, UnknownSplitError
from openenv_prime.verifiers_taskset import (
    OpenEnvChatHarness,
    OpenEnvEnv,
    OpenEnvTaskset,
    OpenEnvTasksetConfig,
)
from tests.support.waiting import HANG_GUARD_S


def _load(base_url: str, **fields) -> list:
    return list(OpenEnvTaskset(OpenEnvTasksetConfig(id="openenv-prime", base_url=base_url, **fields)))


def test_loads_every_test_task_with_durable_keys_and_families(chain_sum_server, chain_sum_tasks):
    with TaskAPIClient(chain_sum_server) as api:
        count = api.num_tasks("test")
        probes = {i: api.get_task("test", i) for i in (0, count // 2, count - 1)}
    assert len(chain_sum_tasks) == count
    assert {i: chain_sum_tasks[i].data.spec for i in probes} == probes
    keys = [task.key for task in chain_sum_tasks]
    assert len(set(keys)) == len(keys)
    for position, task in enumerate(chain_sum_tasks):
        data = task.data
        assert (data.env_name, data.split, data.index) == ("chain_sum", "test", position)
        assert data.id == data.spec["id"]
        assert task.key == data.spec['id'] and data.spec['id'].startswith('chain_sum/test/')
        assert data.family == str(data.spec["tier"])
        assert data.prompt is None and data.system_prompt is None  # each episode's first turn carries it (env.py)
    assert {task.data.family for task in chain_sum_tasks} == {"0", "1", "2", "3", "4"}


def test_task_data_names_no_server_so_keys_and_hashes_survive_a_move(chain_sum_server, chain_sum_tasks):
    port = chain_sum_server.rsplit(":", 1)[1]
    moved = _load(chain_sum_server.replace("127.0.0.1", "localhost"), splits=["test"])
    assert [t.key for t in moved] == [t.key for t in chain_sum_tasks]
    assert [t.hash for t in moved] == [t.hash for t in chain_sum_tasks]
    assert port not in chain_sum_tasks[0].data.model_dump_json()


def test_small_pages_load_the_same_tasks(chain_sum_server, chain_sum_tasks):
    paged = _load(chain_sum_server, splits=["test"], page_size=97)
    assert [t.data for t in paged] == [t.data for t in chain_sum_tasks]


def test_default_config_loads_every_listed_split_and_says_how_to_choose_one(chain_sum_server):
    with TaskAPIClient(chain_sum_server) as api:
        splits = [s["name"] for s in api.splits()]
        total = sum(api.num_tasks(s) for s in splits)
    assert splits == ["train", "test"]
    with pytest.warns(UserWarning) as caught:
        tasks = _load(chain_sum_server)
    assert len(tasks) == total  # a trainer that relied on every split keeps them
    assert [t.data.split for t in tasks] == sorted((t.data.split for t in tasks), key=splits.index)
    (note,) = [str(w.message) for w in caught if "--env.taskset.splits" in str(w.message)]
    assert "vf-eval plays its first tasks, from 'train'" in note and "held-out 'test' tasks" in note
    assert """--env.taskset.splits '["test"]' to evaluate""" in note and 'splits = ["train"] to train' in note


def test_named_splits_or_a_single_split_bring_no_split_warning(chain_sum_server, tmp_path):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert _load(chain_sum_server, splits=["test"], check_reset=False)
        assert _load(chain_sum_server, splits=["train", "test"], check_reset=False)


def test_unknown_split_is_refused_with_the_listed_splits(chain_sum_server):
    with pytest.raises(UnknownSplitError) as caught:
        _load(chain_sum_server, splits=["test", "validaton"])
    message = str(caught.value)
    assert "validaton" in message and "'test'" in message and chain_sum_server in message


def test_server_down_at_load_names_the_url():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    url = f"http://127.0.0.1:{port}"
    with pytest.raises(OpenEnvError) as caught:
        _load(url, timeout=2.0)
    assert url in str(caught.value)


def test_id_field_missing_falls_back_to_content_hash_keys_with_a_warning(chain_sum_server):
    with pytest.warns(UserWarning, match=r"1000 of 1000 task specs .* no id field 'no_such_field'.*"
                      r"set --env.taskset.id-field id \(id_field = 'id'\): the specs' own 'id' names each task of a split once"):
        tasks = _load(chain_sum_server, splits=["test"], id_field="no_such_field", family_field=None)
    assert all(t.data.id.startswith("sha256:") and t.data.family == "all" for t in tasks)
    assert len({t.key for t in tasks}) == len(tasks)


def test_duplicate_keys_are_refused(chain_sum_server):
    with pytest.raises(ValueError, match="repeats"):
        _load(chain_sum_server, splits=["test"], id_field="tier")


def test_verifiers_discovers_taskset_env_and_harness():
    from verifiers.v1.utils.loaders import default_harness_id, environment_class, taskset_class

    assert taskset_class("openenv-prime") is OpenEnvTaskset
    assert environment_class("openenv-prime") is OpenEnvEnv
    assert default_harness_id("openenv-prime") == "openenv-prime"
    from verifiers.v1.utils.loaders import harness_class

    assert harness_class("openenv-prime") is OpenEnvChatHarness


def test_samplers_import_without_verifiers():
    code = "import sys, openenv_prime.samplers; assert 'verifiers' not in sys.modules, 'verifiers imported'"
    subprocess.run([sys.executable, "-c", code], check=True, timeout=HANG_GUARD_S)


def test_unknown_environment_name_is_refused(chain_sum_server):
    from openenv_prime.client.wire.errors import UnknownEnvironmentError

    with pytest.raises(UnknownEnvironmentError) as caught:
        _load(chain_sum_server, env_name="chain_sums")
    assert "chain_sums" in str(caught.value)


def test_task_key_is_env_split_id_without_doubling_a_prefixed_id():
    from openenv_prime.verifiers_taskset.keys import task_key

    assert task_key("guess", "test", "guess-1") == "guess/test/guess-1"
    assert task_key("chain_sum", "test", "chain_sum/test/t0/1") == "chain_sum/test/t0/1"
    assert task_key("chain_sum", "train", "chain_sum/test/t0/1") == "chain_sum/train/chain_sum/test/t0/1"


def test_the_id_like_field_is_one_every_spec_has_once():
    from openenv_prime.verifiers_taskset.keys import id_like_field

    rows = [{"question": f"q{i}", "answer": "7", "example_id": i, "info": {}} for i in range(4)]
    assert id_like_field([rows, rows[:2]]) == "example_id"  # an imported verifiers environment's row number per split
    assert id_like_field([[{**row, "example_id": 0} for row in rows]]) is None  # repeated in a split: names no task
    assert id_like_field([[{"valid": str(i), "taskId": f"t{i}"} for i in range(3)]]) == "taskId"  # "valid" is no id
    assert id_like_field([[{"uid": i, "flag_id": True} for i in range(2)]]) == "uid"
    assert id_like_field([[{"task_id": None}, {"task_id": "b"}]]) is None and id_like_field([[], []]) is None


@given(st.lists(st.dictionaries(st.sampled_from(["id", "example_id", "x", "seed_id"]),
                                st.one_of(st.integers(0, 3), st.text(max_size=2), st.none()), min_size=1), max_size=6))
def test_a_named_id_like_field_keys_every_spec_uniquely(specs):
    from openenv_prime.verifiers_taskset.keys import durable_id, id_like_field

    found = id_like_field([specs])
    if found is not None:
        keys = [durable_id(spec, found) for spec in specs]
        assert len(set(keys)) == len(specs) and not any(key.startswith("sha256:") for key in keys)
