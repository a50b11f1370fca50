"""Task sources and the wrapper in process: specs, reset arguments, start-up refusals, class inference."""

import json
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from openenv_prime.client.tasks.tasklist import TaskListError
from openenv_prime.envs.errors import TaskIndexError, TaskRequestError
from openenv_prime.envs.taskapi import SeedTasks, as_task_provider
from openenv_prime.envs.taskapi.classes import load_class, resolve_classes
from openenv_prime.envs.taskapi.seeds import SEED_STRIDE
from openenv_prime.envs.taskapi.wrap import with_task_api
from tests.envs.sample_envs import GuessAction, GuessEnvironment, GuessObservation, NoArgsEnvironment, SecretToolsEnvironment

RECORDS = [
    {"id": "easy-1", "tier": 0, "reset": {"seed": 1, "level": 0}},
    {"id": "hard-1", "tier": 1, "reset": {"seed": 1, "level": 5}},
    {"split": "test", "tier": 1, "reset": {"seed": 9, "level": 5}},
]


def write_jsonl(path, records):
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def test_task_list_source_serves_specs_without_reset_and_the_reset_arguments(tmp_path):
    source = as_task_provider(str(write_jsonl(tmp_path / "tasks.jsonl", RECORDS)))
    assert source.list_splits() == [
        {"name": "train", "type": "train", "num_tasks": 2}, {"name": "test", "type": "test", "num_tasks": 1},
    ]
    assert source.get_task("train", 1) == {"id": "hard-1", "split": "train", "tier": 1}
    assert source.get_task("test", 0) == {"id": "0", "split": "test", "tier": 1}  # id defaults to the index
    assert source.reset_kwargs("train", 1) == {"seed": 1, "level": 5}
    assert source.reset_keys() == {"seed", "level"}
    source.reset_kwargs("train", 1)["seed"] = 99  # copies: callers cannot change the source
    assert source.reset_kwargs("train", 1)["seed"] == 1


def test_callable_source_reads_the_same_records_and_validates_them():
    source = as_task_provider(lambda: iter(RECORDS))
    assert [t["id"] for t in source.get_task_range("train")] == ["easy-1", "hard-1"]
    with pytest.raises(TaskListError, match="line 1.*'reset'"):
        as_task_provider(lambda: [{"id": "no-reset"}])
    with pytest.raises(TypeError, match="JSONL task-list path"):
        as_task_provider(42)


def test_seed_source_gives_each_split_its_own_seed_range():
    source = SeedTasks(3, ["train", "dev", "test"])
    seeds = {s: [source.reset_kwargs(s, i)["seed"] for i in range(3)] for s in ("train", "dev", "test")}
    assert seeds == {"train": [0, 1, 2], "dev": [SEED_STRIDE, SEED_STRIDE + 1, SEED_STRIDE + 2],
                     "test": [2 * SEED_STRIDE + i for i in range(3)]}
    assert source.get_task("dev", 2) == {"id": f"seed-{SEED_STRIDE + 2}", "split": "dev", "seed": SEED_STRIDE + 2}
    for bad in (0, -1, True, SEED_STRIDE + 1):
        with pytest.raises(ValueError, match="seeds per split must be an integer"):
            SeedTasks(bad)
    with pytest.raises(ValueError, match="distinct non-empty"):
        SeedTasks(3, ["train", "train"])


@settings(max_examples=100, deadline=None)
@given(n=st.integers(1, 50), start=st.none() | st.integers(-60, 60), stop=st.none() | st.integers(-60, 60))
def test_task_range_follows_python_slices_and_ids_are_unique(n, start, stop):
    source = SeedTasks(n)
    got = [t["seed"] for t in source.get_task_range("test", start, stop)]
    assert got == [SEED_STRIDE + i for i in range(n)][start:stop]
    assert len({t["id"] for s in ("train", "test") for t in source.get_task_range(s)}) == 2 * n


@pytest.mark.parametrize(
    "call, error, field, message",
    [
        (lambda s: s.get_task("dev", 0), TaskRequestError, "split", "unknown split 'dev'; known splits: train, test"),
        (lambda s: s.num_tasks("dev"), TaskRequestError, "split", "known splits: train, test"),
        (lambda s: s.get_task("test", "1"), TaskRequestError, "index", "must be an integer"),
        (lambda s: s.get_task("test", 5), TaskIndexError, None, r"out of range for split 'test' \(0..4\)"),
        (lambda s: s.reset_kwargs("test", -1), TaskIndexError, None, "out of range"),
    ],
)
def test_bad_requests_name_the_field_and_the_valid_values(call, error, field, message):
    with pytest.raises(error, match=message) as caught:
        call(SeedTasks(5))
    assert getattr(caught.value, "field", None) == field


def test_wrapped_reset_plays_exactly_the_task_and_keeps_the_class_untouched():
    wrapped = with_task_api(GuessEnvironment, lambda: RECORDS)
    assert issubclass(wrapped, GuessEnvironment) and wrapped.__name__ == "GuessEnvironment"
    assert not hasattr(GuessEnvironment, "list_splits")  # the original class gets nothing
    env = wrapped()
    obs = env.reset(split="train", index=1, episode_id="ep")
    assert (obs.seed, obs.level, env.state.episode_id) == (1, 5, "ep")
    assert env.task_api_task == {"id": "hard-1", "split": "train", "tier": 1}
    assert env.step(GuessAction(guess=(1 * 7 + 5) % 100)).reward == 1.0
    # index without split means train; no index is the class's own reset
    assert env.reset(index=0).level == 0 and env.reset(seed=4).seed == 4 and env.task_api_task is None


@pytest.mark.parametrize(
    "kwargs, field, message",
    [
        ({"split": "train", "index": 0, "colour": "red"}, "colour", r"unknown reset argument 'colour'; GuessEnvironment.reset\(seed, episode_id, level\)"),
        ({"split": "train", "index": 0, "level": 3}, "level", "resets with level=0, but the request also passed level=3"),
        ({"split": "train"}, "split", r"unknown reset argument 'split' \(pass index=... with split\)"),
        ({"split": "dev", "index": 0}, "split", "unknown split 'dev'"),
    ],
)
def test_refused_resets_name_the_argument_and_keep_the_episode(kwargs, field, message):
    env = with_task_api(GuessEnvironment, lambda: RECORDS)()
    env.reset(split="test", index=0, episode_id="keep")
    with pytest.raises(TaskRequestError, match=message) as caught:
        env.reset(**kwargs)
    assert caught.value.field == field
    assert env.state.episode_id == "keep" and env.step(GuessAction(guess=(9 * 7 + 5) % 100)).reward == 1.0


def test_matching_extra_arguments_pass_and_episode_id_is_dropped_when_reset_lacks_it():
    env = with_task_api(GuessEnvironment, lambda: RECORDS)()
    assert env.reset(split="train", index=1, level=5, seed=1).level == 5
    no_args = with_task_api(NoArgsEnvironment, lambda: [{"reset": {}}])()
    assert no_args.reset(split="train", index=0, episode_id="ignored").seed == 0


def test_reset_arguments_the_class_does_not_take_are_refused_at_start_up():
    with pytest.raises(ValueError, match=r"tasks reset with \['seed'\], but NoArgsEnvironment.reset\(\) does not take it"):
        with_task_api(NoArgsEnvironment, SeedTasks(3))
    with pytest.raises(ValueError, match=r"tasks reset with \['colour'\].*GuessEnvironment.reset\(seed, episode_id, level\)"):
        with_task_api(GuessEnvironment, lambda: [{"reset": {"colour": "red"}}])
    # **kwargs takes anything: an MCP environment written that way accepts every key
    with_task_api(SecretToolsEnvironment, lambda: [{"reset": {"bonus": 1}}])
    with pytest.raises(TypeError, match="not an openenv Environment subclass"):
        with_task_api(dict, SeedTasks(1))


UNANNOTATED = """
from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.types import Action, Observation, State
{imports}

class Unannotated(Environment):  # like OpenEnv's connect4: no type arguments, no return annotations
    def reset(self, seed=None, episode_id=None): ...
    def step(self, action, timeout_s=None, **kwargs): ...
    state = None
"""


def test_classes_are_read_from_the_environment_or_named_explicitly(tmp_path, monkeypatch):
    assert resolve_classes(GuessEnvironment)[:2] == (GuessAction, GuessObservation)
    from openenv.core.env_server.mcp_types import CallToolAction, CallToolObservation

    assert resolve_classes(SecretToolsEnvironment)[:2] == (CallToolAction, CallToolObservation)
    monkeypatch.setattr(sys, "path", [str(tmp_path), *sys.path])
    # the one Action and the one Observation subclass its module imports
    (tmp_path / "toy_one_each.py").write_text(UNANNOTATED.format(imports="from tests.envs.sample_envs import GuessAction, GuessObservation"))
    assert resolve_classes(load_class("toy_one_each:Unannotated"))[:2] == (GuessAction, GuessObservation)
    # two candidates: no guess, the error names the flag
    two = "from tests.envs.sample_envs import GuessAction\nclass A2(Action): pass\nclass O2(Observation): pass"
    (tmp_path / "toy_two_each.py").write_text(UNANNOTATED.format(imports=two))
    unannotated = load_class("toy_two_each:Unannotated")
    with pytest.raises(ValueError, match="cannot tell the action class of Unannotated.*pass --action MODULE:CLASS"):
        resolve_classes(unannotated)
    assert resolve_classes(unannotated, GuessAction, GuessObservation)[:2] == (GuessAction, GuessObservation)


def test_load_class_reports_what_is_wrong():
    assert load_class("tests.envs.sample_envs:GuessEnvironment") is GuessEnvironment
    for spec, message in [
        ("tests.envs.sample_envs", "expected MODULE:CLASS"),
        ("no_such_module_xyz:Env", "cannot import module 'no_such_module_xyz'.*--path"),
        ("tests.envs.sample_envs:Nope", "has no attribute 'Nope'"),
        ("tests.envs.sample_envs:RECORDS_NONE", "has no attribute"),
    ]:
        with pytest.raises(ValueError, match=message):
            load_class(spec)


def test_load_class_imports_from_a_checkout_path(tmp_path, monkeypatch):
    monkeypatch.setattr(sys, "path", list(sys.path))  # load_class prepends the checkout: undo it afterwards
    package = tmp_path / "my_checkout" / "toy_checkout_envs" / "toy_env"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "env.py").write_text("from tests.envs.sample_envs import GuessEnvironment as ToyEnvironment\n")
    assert load_class("toy_checkout_envs.toy_env.env:ToyEnvironment", [tmp_path / "my_checkout"]) is GuessEnvironment
    (tmp_path / "my_checkout" / "toy_checkout_envs" / "toy_env" / "needs_dep.py").write_text("import no_such_dependency_xyz\n")
    with pytest.raises(ValueError, match="it imports 'no_such_dependency_xyz': install the package that provides it"):
        load_class("toy_checkout_envs.toy_env.needs_dep:Env", [tmp_path / "my_checkout"])
    with pytest.raises(ValueError, match="is not a directory"):
        load_class("toy_checkout_envs.toy_env.env:ToyEnvironment", [tmp_path / "missing"])


def test_a_class_with_its_own_reset_async_gets_the_task_there_too():
    import asyncio

    from tests.envs.sample_envs import AsyncGuessEnvironment

    env = with_task_api(AsyncGuessEnvironment, lambda: RECORDS)()
    obs = asyncio.run(env.reset_async(split="train", index=1))
    assert (obs.seed, obs.level, obs.target_hint) == (1, 5, "async")
    with pytest.raises(TaskRequestError, match="unknown reset argument 'colour'"):
        asyncio.run(env.reset_async(split="train", index=1, colour="red"))
    assert "reset_async" not in with_task_api(GuessEnvironment, lambda: RECORDS).__dict__  # only where the class has one
