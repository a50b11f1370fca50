"""Every sampler draws from its pool; sequential covers each task once per epoch; uniform is uniform."""

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from openenv_prime.samplers import (
    SAMPLERS,
    CurriculumSampler,
    SequentialSampler,
    Task,
    TaskSampler,
    UniformSampler,
    make_sampler,
)
from sampler_helpers import KINDS, build, chi_square, chi_square_critical, make_pool, sizes_st

FAST = settings(max_examples=40, deadline=None)


@FAST
@given(kind=st.sampled_from(KINDS), sizes=sizes_st, n=st.integers(0, 60), seed=st.integers(0, 2**31))
def test_sample_returns_n_tasks_of_the_pool(kind, sizes, n, seed):
    tasks = make_pool(sizes)
    sampler = build(kind, tasks, seed)
    assert isinstance(sampler, TaskSampler)
    drawn = sampler.sample(n)
    assert len(drawn) == n
    assert set(drawn) <= set(tasks)
    assert sum(sampler.metrics()[f"key/{k}/draw_share"] for k in {t.key for t in tasks}) == pytest.approx(
        1.0 if n else 0.0
    )


@FAST
@given(sizes=sizes_st, epochs=st.integers(1, 4), chunks=st.lists(st.integers(0, 7), min_size=1, max_size=10))
def test_sequential_gives_each_task_once_per_epoch_in_order(sizes, epochs, chunks):
    tasks = make_pool(sizes)
    sampler = SequentialSampler(tasks)
    drawn = []
    while len(drawn) < epochs * len(tasks):  # any chunking of the calls gives the same stream
        drawn += sampler.sample(chunks[len(drawn) % len(chunks)] or 1)
    for e in range(epochs):
        assert drawn[e * len(tasks) : (e + 1) * len(tasks)] == tasks
    assert sampler.epoch >= epochs


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_uniform_over_tasks_passes_chi_square(seed):
    tasks = make_pool([1, 3, 9, 27])  # 40 tasks, very unequal keys
    draws = 40 * 500
    counts = {t: 0 for t in tasks}
    for t in UniformSampler(tasks, over="tasks", seed=seed).sample(draws):
        counts[t] += 1
    stat = chi_square(list(counts.values()), [draws / len(tasks)] * len(tasks))
    assert stat < chi_square_critical(len(tasks) - 1)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_uniform_over_keys_passes_chi_square_on_keys_and_within_keys(seed):
    sizes = [1, 3, 9, 27]
    tasks = make_pool(sizes)
    draws = 20000
    drawn = UniformSampler(tasks, over="keys", seed=seed).sample(draws)
    per_key = [sum(t.key == f"k{k}" for t in drawn) for k in range(len(sizes))]
    assert chi_square(per_key, [draws / len(sizes)] * len(sizes)) < chi_square_critical(len(sizes) - 1)
    big = [t for t in drawn if t.key == "k3"]
    counts = [sum(t == task for t in big) for task in tasks if task.key == "k3"]
    assert chi_square(counts, [len(big) / 27] * 27) < chi_square_critical(26)


def test_chi_square_check_rejects_a_skewed_sampler():
    """The uniformity check above can fail: over keys is far from uniform over tasks."""
    tasks = make_pool([1, 3, 9, 27])
    draws = 40 * 500
    counts = {t: 0 for t in tasks}
    for t in UniformSampler(tasks, over="keys", seed=0).sample(draws):
        counts[t] += 1
    assert chi_square(list(counts.values()), [draws / 40] * 40) > chi_square_critical(39)


@FAST
@given(sizes=sizes_st, seed=st.integers(0, 2**31), mode=st.sampled_from(["tasks", "keys"]))
def test_uniform_is_reproducible_from_its_seed(sizes, seed, mode):
    tasks = make_pool(sizes)
    assert UniformSampler(tasks, over=mode, seed=seed).sample(30) == UniformSampler(tasks, over=mode, seed=seed).sample(30)


@FAST
@given(sizes=sizes_st, seed=st.integers(0, 2**31), rounds=st.integers(1, 3))
def test_curriculum_draws_every_task_of_a_key_before_repeating_it(sizes, seed, rounds):
    tasks = make_pool(sizes)
    sampler = CurriculumSampler(tasks, seed=seed)
    rng = random.Random(seed)
    per_key: dict[str, list[Task]] = {}
    for _ in range(rounds * 40):
        for task in sampler.sample(1):
            per_key.setdefault(task.key, []).append(task)
        key = rng.choice(sorted({t.key for t in tasks}))
        sampler.update(key, [float(rng.random() < 0.5) for _ in range(4)])
    for key, seq in per_key.items():
        m = sum(t.key == key for t in tasks)
        for start in range(0, len(seq) - m + 1, m):
            assert len(set(seq[start : start + m])) == m


def test_make_sampler_builds_each_registered_sampler():
    tasks = make_pool([2, 2])
    assert set(SAMPLERS) == {"sequential", "uniform", "curriculum"}
    assert isinstance(make_sampler("sequential", tasks), SequentialSampler)
    uniform = make_sampler("uniform", tasks, over="keys", seed=3)
    assert isinstance(uniform, UniformSampler) and uniform.over == "keys"
    curriculum = make_sampler("curriculum", tasks, group_size=16, gamma=0.5)
    assert isinstance(curriculum, CurriculumSampler) and curriculum.group_size == 16 and curriculum.gamma == 0.5


def test_a_runs_defaults_reach_each_sampler_only_where_it_takes_them():
    tasks = make_pool([2, 2])
    run = {"seed": 5, "group_size": 4}
    assert isinstance(make_sampler("sequential", tasks, defaults=run), SequentialSampler)  # neither
    uniform = make_sampler("uniform", tasks, defaults=run, over="keys")
    assert uniform.seed == 5 and uniform.over == "keys"  # the seed, not the group size
    curriculum = make_sampler("curriculum", tasks, defaults=run, group_size=8)
    assert curriculum.seed == 5 and curriculum.group_size == 8  # the user's settings win over the run's
    with pytest.raises(TypeError, match="'uniform' does not take that setting"):
        make_sampler("uniform", tasks, defaults=run, group_size=8)  # a user's setting must be taken


def test_make_sampler_names_the_problem():
    with pytest.raises(ValueError, match="unknown sampler 'thompson'.*curriculum"):
        make_sampler("thompson", make_pool([1]))
    with pytest.raises(TypeError, match="'sequential' does not take that setting"):
        make_sampler("sequential", make_pool([1]), seed=1)


def test_task_is_hashable_immutable_and_spec_does_not_change_identity():
    a = Task("test", 7, "3", {"tier": 3})
    b = Task("test", 7, "3", {"tier": 99})
    assert a == b and hash(a) == hash(b)
    with pytest.raises(AttributeError):
        a.index = 8
    with pytest.raises(TypeError):
        a.spec["tier"] = 4
    with pytest.raises(TypeError, match="key must be a string.*'3'"):
        Task("test", 7, 3)
    with pytest.raises(TypeError, match="index must be an int"):
        Task("test", -1, "3")


@FAST
@given(sizes=sizes_st, mode=st.sampled_from(["tasks", "keys"]), data=st.data())
def test_uniform_distribution_ignores_key_names_and_order(sizes, mode, data):
    tasks = make_pool(sizes)
    names = data.draw(st.lists(st.text(min_size=1, max_size=4), min_size=len(sizes), max_size=len(sizes), unique=True))
    rename = {f"k{i}": name for i, name in enumerate(names)}
    moved = data.draw(st.permutations([Task(t.split, t.index, rename[t.key]) for t in tasks]))
    before = UniformSampler(tasks, over=mode).probabilities()
    after = UniformSampler(moved, over=mode).probabilities()
    assert {rename[k]: p for k, p in before.items()} == pytest.approx(after, rel=1e-12)


def test_a_sampler_with_only_the_rfcs_five_methods_is_a_task_sampler():
    class FiveMethods:
        def sample(self, n): return []
        def update(self, key, rewards, costs=None): pass
        def state_dict(self): return {}
        def load_state_dict(self, state): pass
        def metrics(self): return {}

    assert isinstance(FiveMethods(), TaskSampler)
    assert not isinstance(object(), TaskSampler)
    assert all(isinstance(make_sampler(name, make_pool([2, 2])), TaskSampler) for name in SAMPLERS)


@pytest.mark.parametrize("name", ["sequential", "uniform", "curriculum"])
def test_costs_for_some_groups_and_not_others_are_refused_and_change_nothing(name):
    sampler = make_sampler(name, make_pool([2, 2]))
    sampler.update("k0", [1.0, 0.0], costs=[3.0, 4.0])
    before = sampler.state_dict()
    with pytest.raises(ValueError, match="report costs for every group or for none"):
        sampler.update("k0", [1.0, 0.0])
    assert sampler.state_dict() == before
    sampler.update("k1", [0.0, 0.0], costs=[1.0, 1.0])  # with costs, as before: fine
    costless = make_sampler(name, make_pool([2, 2]))
    costless.update("k0", [1.0, 0.0])
    with pytest.raises(ValueError, match="the earlier ones had none"):
        costless.update("k0", [1.0, 0.0], costs=[1.0, 1.0])
    assert costless.metrics(per_key=False)["signal_per_cost"] == 0.0
