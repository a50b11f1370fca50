"""The adapter inside a real, patched prime-rl: TOML -> prime-rl config classes -> `Curriculum`
over tasks loaded by the openenv-prime taskset from a real chain_sum server -> `on_result` ->
checkpoint -> restore. Runs only where PRIME_RL_DIR names a prime-rl checkout with
patches/prime-rl-custom-sampler.patch applied (`patches/check` sets this up)."""

from __future__ import annotations

import io
import os
import pickle
import sys
import uuid
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parents[2]
CONFIGS = sorted((ROOT / "configs" / "prime-rl").glob("*.toml"))
PRIME_RL_DIR = os.environ.get("PRIME_RL_DIR")

# patches/check sets this so that a broken setup fails instead of skipping.
REQUIRED = os.environ.get("OPENENV_PRIME_REQUIRE_PRIME_RL") == "1"

if not PRIME_RL_DIR:
    if REQUIRED:
        raise RuntimeError("OPENENV_PRIME_REQUIRE_PRIME_RL=1 but PRIME_RL_DIR is unset")
    pytest.skip("PRIME_RL_DIR is unset: no prime-rl checkout to test against", allow_module_level=True)
for sub in ("src", "packages/prime-rl-configs/src"):
    path = str(Path(PRIME_RL_DIR, sub))
    if path not in sys.path:
        sys.path.insert(0, path)
try:
    from prime_rl.configs.orchestrator import CustomSamplerConfig
    from prime_rl.configs.rl import RLConfig
    from prime_rl.orchestrator.curriculum import Curriculum, TaskSampler
    from prime_rl.utils.config import cli
except ImportError as exc:
    if REQUIRED:
        raise
    pytest.skip(
        f"prime-rl at {PRIME_RL_DIR} does not import with the custom sampler patch ({exc})",
        allow_module_level=True,
    )

import verifiers.v1 as vf  # noqa: E402

from openenv_prime.prime_rl_adapter import OpenEnvPrimeSampler, parse_kwargs  # noqa: E402
from tests.prime_rl_adapter.vf_groups import trace  # noqa: E402


def parse(path: Path) -> RLConfig:
    return cli(RLConfig, args=["@", str(path)])


def load_tasks(taskset_config, base_url: str) -> list[vf.Task]:
    """What prime-rl's orchestrator does (envs.py): load the taskset and materialize it."""
    taskset = vf.load_taskset(taskset_config.model_copy(update={"base_url": base_url}))
    return list(taskset)


def group_with_advantages(task: vf.Task, rewards: list[float]) -> list[vf.Episode]:
    """A finalized group as the train sink hands it over, with GRPO advantages on the tokens."""
    mean = sum(rewards) / len(rewards)
    episodes = []
    group_id = str(uuid.uuid4())
    for reward in rewards:
        t = trace(task, reward)
        t.nodes[1] = t.nodes[1].model_copy(
            update={"token_ids": [1, 2], "mask": [True, True], "logprobs": [0.0, 0.0],
                    "advantages": [reward - mean] * 2, "sampled": True}
        )
        episodes.append(
            vf.Episode(env=vf.EnvInfo(id="openenv-prime", name="chain-sum"), task=t.task,
                       group=vf.GroupInfo(id=group_id), traces=[t])
        )
    return episodes


def test_configs_exist() -> None:
    assert CONFIGS, "configs/prime-rl/*.toml is empty"


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: p.name)
def test_every_config_parses_with_prime_rl_config_classes(path: Path) -> None:
    config = parse(path)
    train = config.orchestrator.train.source
    assert train and config.orchestrator.eval.source
    for source in train:
        sampler = source.curriculum.sampler
        assert isinstance(sampler, CustomSamplerConfig)
        assert sampler.import_path == "openenv_prime.prime_rl_adapter.OpenEnvPrimeSampler"
        parse_kwargs(sampler.kwargs)
        assert set(source.curriculum.gates) == {"zero_advantage"}
        assert source.env.taskset.splits == ["train"]
        assert sampler.kwargs["sampler_kwargs"].get("group_size", source.group_size) == source.group_size
    assert all(source.env.taskset.splits == ["test"] for source in config.orchestrator.eval.source)


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: p.name)
def test_curriculum_built_from_config_trains_checkpoints_and_resumes(path: Path, server_url: str) -> None:
    source = parse(path).orchestrator.train.source[0]
    tasks = load_tasks(source.env.taskset, server_url)
    curriculum = Curriculum(source.curriculum, tasks)
    assert isinstance(curriculum.sampler, OpenEnvPrimeSampler)
    assert isinstance(curriculum.sampler, TaskSampler)

    def play(curriculum: Curriculum, steps: int) -> tuple[list[str], list[bool]]:
        keys, admitted = [], []
        for step in range(steps):
            task = next(curriculum.sampler)
            assert any(task is t for t in tasks)
            keys.append(task.key)
            tier = int(task.data.family)
            rewards = [1.0] * 8 if tier == 0 else [0.0] * 8 if tier == 4 else [1.0, 0.0] * 4
            admitted.append(curriculum.on_result(group_with_advantages(task, rewards)))
        return keys, admitted

    assert {t.data.family for t in tasks} == {"0", "1", "2", "3", "4"}
    keys, admitted = play(curriculum, 40)
    # The gate drops the all-equal groups, but only after the sampler saw them.
    assert admitted.count(False) > 0 and curriculum.sampler.counts["updates"] == 40
    metrics = curriculum.metrics()
    assert metrics["sampler/adapter/updates"] == 40.0
    assert all(type(v) is float for v in metrics.values())

    next(curriculum.sampler)  # in flight at checkpoint time
    buffer = io.BytesIO()
    try:
        import torch

        torch.save(curriculum.state_dict(), buffer)
        buffer.seek(0)
        state = torch.load(buffer, weights_only=False)
    except ImportError:
        state = pickle.loads(pickle.dumps(curriculum.state_dict()))
    continued = play(curriculum, 30)

    restored = Curriculum(source.curriculum, load_tasks(source.env.taskset, server_url))
    restored.load_state_dict(state)
    assert restored.sampler.metrics()["adapter/pending_groups"] == 0.0
    tasks[:] = restored.sampler.tasks  # `play` checks identity against the taskset in use
    assert play(restored, 30) == continued


def test_bad_kwargs_in_a_toml_fail_when_the_curriculum_is_built(tmp_path: Path, server_url: str) -> None:
    text = CONFIGS[0].read_text().replace('family_field = "family"', 'famliy_field = "family"', 1)
    bad = tmp_path / "bad.toml"
    bad.write_text(text)
    source = parse(bad).orchestrator.train.source[0]  # prime-rl passes kwargs through untyped
    with pytest.raises(ValueError, match=r"curriculum\.sampler\.kwargs\.famliy_field"):
        Curriculum(source.curriculum, load_tasks(source.env.taskset, server_url))


def test_a_nan_reward_through_prime_rls_curriculum_does_not_raise() -> None:
    """Before: `observe` raised the inner sampler's ValueError through `Curriculum.on_result`,
    which the train sink does not catch, so one NaN reward stopped the orchestrator."""
    from tests.prime_rl_adapter.vf_groups import family_tasks, scored_group

    tasks = family_tasks({"1": 2, "2": 2})
    config = CustomSamplerConfig(
        import_path="openenv_prime.prime_rl_adapter.OpenEnvPrimeSampler",
        kwargs={"sampler_kwargs": {"group_size": 2}},
    )
    from prime_rl.configs.orchestrator import CurriculumConfig

    curriculum = Curriculum(CurriculumConfig(sampler=config), tasks)
    curriculum.on_result(scored_group(tasks[0], [float("nan"), 1.0]))
    curriculum.on_result(scored_group(tasks[1], [float("inf"), float("nan")]))
    metrics = curriculum.metrics()
    assert metrics["sampler/adapter/nonfinite_rewards"] == 3.0
    assert metrics["sampler/adapter/updates"] == 1.0


rewards_or_bad = st.floats(0.0, 1.0) | st.sampled_from([float("nan"), None])


@settings(max_examples=60, deadline=None)
@given(rollouts=st.lists(st.tuples(rewards_or_bad, st.booleans(), st.booleans(), st.booleans()), max_size=8))
def test_rewards_are_read_from_exactly_the_traces_prime_rl_trains_on(rollouts) -> None:
    """Parity with prime-rl's own helper (`iter_trainable_traces`: clean, trainable, some
    masked token); the adapter additionally leaves out NaN and missing rewards, and counts every one of
    them, on a trace with sampled tokens or not."""
    import math

    from prime_rl.orchestrator.algo.base import iter_trainable_traces

    from openenv_prime.prime_rl_adapter import read_group
    from tests.prime_rl_adapter.vf_groups import family_tasks, group

    task = family_tasks({"1": 1})[0]
    traces = []
    for reward, ok, trainable, sampled in rollouts:
        t = trace(task, 0.0 if reward is None else reward, ok=ok, trainable=trainable, sampled=sampled)
        traces.append(t.model_copy(update={"rewards": {}}) if reward is None else t)
    episodes = group(task, traces)
    trained = [t for _, t in iter_trainable_traces(episodes)]
    usable = [t.reward for t in trained if t.rewards and math.isfinite(t.reward)]
    report = read_group(episodes)
    assert report.rewards == usable
    clean = [t for episode in episodes for t in episode.traces if t.agent.trainable and not t.has_error]
    bad = [t for t in clean if not t.rewards or not math.isfinite(t.reward)]
    assert report.nonfinite_rewards + report.missing_rewards == len(bad)
    assert len(usable) + len(bad) + report.unsampled_traces == len(clean)
