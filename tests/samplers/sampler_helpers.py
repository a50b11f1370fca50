"""Pools, strategies and checks shared by the sampler tests."""

from __future__ import annotations

import json
import math

from hypothesis import strategies as st

from openenv_prime.samplers import CurriculumSampler, SequentialSampler, Task, UniformSampler


def make_pool(sizes: list[int], split: str = "train", prefix: str = "k") -> list[Task]:
    """Tasks of keys ``prefix0, prefix1, ...`` with ``sizes[i]`` tasks each, keys interleaved."""
    tasks = []
    index = 0
    for round_ in range(max(sizes)):
        for k, size in enumerate(sizes):
            if round_ < size:
                tasks.append(Task(split, index, f"{prefix}{k}", {"tier": k}))
                index += 1
    return tasks


def build(kind: str, tasks, seed: int = 0):
    if kind == "sequential":
        return SequentialSampler(tasks)
    if kind == "uniform-tasks":
        return UniformSampler(tasks, over="tasks", seed=seed)
    if kind == "uniform-keys":
        return UniformSampler(tasks, over="keys", seed=seed)
    if kind == "curriculum":
        return CurriculumSampler(tasks, group_size=4, seed=seed)
    if kind == "curriculum-variance":
        return CurriculumSampler(tasks, group_size=4, signal="variance", tolerance=0.05, seed=seed)
    raise AssertionError(kind)


KINDS = ("sequential", "uniform-tasks", "uniform-keys", "curriculum", "curriculum-variance")

sizes_st = st.lists(st.integers(min_value=1, max_value=6), min_size=1, max_size=6)
binary_group_st = st.lists(st.sampled_from([0.0, 1.0]), min_size=1, max_size=8)
graded_group_st = st.lists(st.floats(min_value=-2, max_value=2, allow_nan=False), min_size=1, max_size=8)


def frozen(sampler) -> str:
    """The sampler's whole state as canonical JSON text (also proves it is JSON-serializable)."""
    return json.dumps(sampler.state_dict(), sort_keys=True, allow_nan=False)


def chi_square(observed: list[int], expected: list[float]) -> float:
    return sum((o - e) ** 2 / e for o, e in zip(observed, expected))


def chi_square_critical(df: int, z: float = 3.719) -> float:
    """Upper quantile of chi-square (Wilson-Hilferty); z = 3.719 is the 0.9999 normal quantile."""
    return df * (1 - 2 / (9 * df) + z * math.sqrt(2 / (9 * df))) ** 3
