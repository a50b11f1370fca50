"""The task layout of a reasoning-gym tiers server: splits, (dataset, tier) blocks, seeds, specs.

Index layout per split: blocks of ``per_tier[split]`` tasks, one block per (dataset, tier), datasets in
the order given and tiers ascending within each: ``block = index // per_tier``, ``dataset = block //
num_tiers``, ``tier = block % num_tiers``. Item ``local`` of a block is reasoning-gym's item 0 of the
tier's config with seed ``seed_base(split, dataset, tier) + local``: every (split, dataset, tier) has
its own seed range, so the seeds of train and test, and of any two tiers, never meet. A dataset's seeds
depend on its position in reasoning-gym's registry, not on the order of --datasets, so a task id names
the same problem in any server. Seeds stay below 2**32 (numpy-seeded datasets need that).

The optional split ``heldout`` (``per_tier["heldout"]``, `serve reasoning-gym --heldout-size N`) holds test items
whose questions no train item of their block asks, each question once: item ``local`` is the ``local``-th test seed
of the block with a question new to the block's train split and to the heldout items before it. On a tier with
few distinct problems (two one-digit terms: about 100) the test split repeats train's questions; ``heldout`` never
does, and a tier with too few new questions is refused when the server starts (`check_heldout`).

The seed layout, the task ids and spec fields, the split listing and the pick by seed are methods a case of the
server may lay out its own way (`chain_sum.py`, the `serve chain-sum` case); the blocks, the items and the checks are
this class's for every case.

Side-effect free and cheap on a fresh instance: openenv builds a new environment per Task API request.
"""

from __future__ import annotations

import random
from functools import lru_cache
from typing import Any, Sequence

from openenv_prime.envs.errors import TaskIndexError, TaskRequestError
from openenv_prime.envs.taskspecs import IndexedTasks
from openenv_prime.envs.reasoning_gym_tiers.tiers import MAX_TIERS, DatasetError, DatasetTier, dataset_tiers

HELDOUT = "heldout"
DEFAULT_PER_TIER = {"train": 10_000, "test": 200}
_REASONING_GYM_TIER_STRIDE = 1_000_000
_REASONING_GYM_DATASET_STRIDE = MAX_TIERS * _REASONING_GYM_TIER_STRIDE
_REASONING_GYM_SPLIT_OFFSET = {"train": 0, "test": 2**31, HELDOUT: 2**31}  # heldout items are test items (seeds from test's range)


@lru_cache(maxsize=None)
def _registry_position(dataset: str) -> int:
    from reasoning_gym.factory import DATASETS

    return sorted(DATASETS).index(dataset)


def _make_item(dataset: str, num_tiers: int, tier: int, seed: int, schedule: str = "global") -> dict[str, Any]:
    from reasoning_gym import create_dataset

    config = dataset_tiers(dataset, num_tiers, schedule)[tier].config_dict()
    return create_dataset(dataset, **config, seed=seed, size=1)[0]


_item = lru_cache(maxsize=8192)(_make_item)


@lru_cache(maxsize=None)
def _heldout_seeds(dataset: str, num_tiers: int, tier: int, train_base: int, train_size: int, test_base: int,
                   size: int, schedule: str = "global") -> tuple[int, ...]:
    """The first `size` test seeds of a block whose questions no train item of the block asks, each question once."""
    asked = {_make_item(dataset, num_tiers, tier, train_base + i, schedule)["question"] for i in range(train_size)}
    seeds: list[int] = []
    scanned = min(_REASONING_GYM_TIER_STRIDE, 20_000 + 50 * size)
    for seed in range(test_base, test_base + scanned):
        question = _make_item(dataset, num_tiers, tier, seed, schedule)["question"]
        if question not in asked:
            asked.add(question)
            seeds.append(seed)
            if len(seeds) == size:
                return tuple(seeds)
    raise DatasetError(
        f"{dataset}/{tier} has only {len(seeds)} questions that none of its {train_size} train items asks (in its first "
        f"{scanned} test seeds), fewer than --heldout-size {size}; lower --heldout-size or --train-size, or drop the tier"
    )


def check_datasets(datasets: Sequence[str], num_tiers: int) -> None:
    """Build every tier of every dataset and one item of each; one DatasetError names all that fail
    (unknown, no curriculum, too few levels, or an item that cannot be made, e.g. missing data files)."""
    problems = []
    for name in datasets:
        try:
            tiers = dataset_tiers(name, num_tiers)
        except DatasetError as error:
            problems.append(str(error))
            continue
        for tier in tiers:
            try:
                _item(name, num_tiers, tier.tier, _REASONING_GYM_SPLIT_OFFSET["train"] + tier.tier * _REASONING_GYM_TIER_STRIDE)
            except Exception as error:  # missing data files, or a curriculum level reasoning-gym's own config rejects
                problems.append(
                    f"reasoning-gym dataset {name!r} cannot make an item at tier {tier.tier} ({type(error).__name__}: {error}); "
                    f"it may need data files, or its curriculum's level-{tier.tier} config {tier.config_dict()} is invalid"
                )
                break
    if problems:
        raise DatasetError("; ".join(problems))


class ReasoningGymTaskset(IndexedTasks):
    """Splits ``train`` and ``test`` (and optionally ``heldout``) over several datasets, each in ``num_tiers`` tiers of
    ``schedule`` (see `tiers`)."""

    ENV_NAME = "reasoning_gym"
    SPLITS = ("train", "test", HELDOUT)
    """The splits this layout has seeds for."""
    MAX_PER_TIER = _REASONING_GYM_TIER_STRIDE
    """The most tasks a split may have per (dataset, tier): one tier's seed range."""
    MAX_TIERS = MAX_TIERS
    """The most tiers a dataset's seed range holds."""

    def __init__(self, datasets: Sequence[str], num_tiers: int = 3, per_tier: dict[str, int] | None = None,
                 schedule: str = "global"):
        names = list(datasets)
        if not names or len(set(names)) != len(names):
            raise DatasetError(f"--datasets must name distinct reasoning-gym datasets, got {names!r}")
        self.datasets = tuple(names)
        self.num_tiers = num_tiers
        self.schedule = schedule
        self.tiers: dict[str, tuple[DatasetTier, ...]] = {}
        problems = []
        for name in names:
            try:
                self.tiers[name] = dataset_tiers(name, num_tiers, schedule)
            except DatasetError as error:
                problems.append(str(error))
        if problems:
            raise DatasetError("; ".join(problems))
        if num_tiers > self.MAX_TIERS:
            raise DatasetError(f"--tiers {num_tiers}: this server lays out seeds for at most {self.MAX_TIERS} tiers")
        self.per_tier = dict(DEFAULT_PER_TIER if per_tier is None else per_tier)
        unknown = set(self.per_tier) - set(self.SPLITS)
        if unknown:
            raise ValueError(f"unknown split(s) {sorted(unknown)} in per_tier; known splits: {sorted(self.SPLITS)}")
        for split, size in self.per_tier.items():
            if isinstance(size, bool) or not isinstance(size, int) or not 1 <= size <= self.MAX_PER_TIER:
                raise ValueError(f"--{split}-size must be an integer from 1 to {self.MAX_PER_TIER}, got {size!r}")
        if HELDOUT in self.per_tier and "train" not in self.per_tier:
            raise ValueError("a heldout split is held out from the train split: per_tier needs a train size too")

    @property
    def families(self) -> list[str]:
        return [tier.family for name in self.datasets for tier in self.tiers[name]]

    def _check_split(self, split: Any) -> int:
        if split not in self.per_tier:
            raise TaskRequestError("split", f"unknown split {split!r}; known splits: {', '.join(self.per_tier)}")
        return self.per_tier[split]

    def check_tier(self, tier: Any) -> int:
        if isinstance(tier, bool) or not isinstance(tier, int) or not 0 <= tier < self.num_tiers:
            raise TaskRequestError("tier", f"tier must be an integer from 0 to {self.num_tiers - 1}, got {tier!r}")
        return tier

    def seed_base(self, split: str, dataset: str, tier: int) -> int:
        """The reasoning-gym seed of item 0 of (split, dataset, tier) (for heldout: where its scan of test seeds starts)."""
        return (_REASONING_GYM_SPLIT_OFFSET[split] + _registry_position(dataset) * _REASONING_GYM_DATASET_STRIDE
                + tier * _REASONING_GYM_TIER_STRIDE)

    def heldout_seeds(self, dataset: str, tier: int) -> tuple[int, ...]:
        """The seeds of (dataset, tier)'s heldout items; a DatasetError when the tier has too few new questions."""
        return _heldout_seeds(dataset, self.num_tiers, tier, self.seed_base("train", dataset, tier), self.per_tier["train"],
                              self.seed_base("test", dataset, tier), self.per_tier[HELDOUT], self.schedule)

    def check_heldout(self) -> None:
        """Find every block's heldout items now (a server calls this before serving); one DatasetError names each tier
        without enough questions that train never asks. Nothing to do without a heldout split."""
        if HELDOUT not in self.per_tier:
            return
        problems = []
        for name in self.datasets:
            for tier in range(self.num_tiers):
                try:
                    self.heldout_seeds(name, tier)
                except DatasetError as error:
                    problems.append(str(error))
        if problems:
            raise DatasetError("; ".join(problems))

    # -- Task API -------------------------------------------------------------------------------

    def list_splits(self) -> list[dict[str, Any]]:
        return [
            {"name": s, "type": s, "num_tasks": n * len(self.families), "datasets": list(self.datasets),
             "num_tiers": self.num_tiers, "per_tier": n, "family_field": "family"}
            for s, n in self.per_tier.items()
        ]

    def num_tasks(self, split: str) -> int:
        return self._check_split(split) * len(self.families)

    def get_task(self, split: str, index: int) -> dict[str, Any]:
        return self.task_spec(split, index, *self._locate(split, index))

    def _locate(self, split: str, index: Any) -> tuple[str, int, int, int]:
        """(dataset, tier, local index, seed) of task ``index`` of ``split``; checks both."""
        per_tier = self._check_split(split)
        if isinstance(index, bool) or not isinstance(index, int):
            raise TaskRequestError("index", f"task index must be an integer, got {index!r}")
        total = per_tier * len(self.families)
        if not 0 <= index < total:
            raise TaskIndexError(f"task index {index!r} out of range for split {split!r} (0..{total - 1})")
        block, local = divmod(index, per_tier)
        dataset, tier = self.datasets[block // self.num_tiers], block % self.num_tiers
        seed = self.heldout_seeds(dataset, tier)[local] if split == HELDOUT else self.seed_base(split, dataset, tier) + local
        return dataset, tier, local, seed

    def task_spec(self, split: str, index: int, dataset: str, tier: int, local: int, seed: int) -> dict[str, Any]:
        """The spec of task ``index``: item ``local`` of (dataset, tier), made with ``seed``."""
        return {
            "id": f"{dataset}/{split}/t{tier}/{local}",
            "split": split,
            "index": index,
            "family": f"{dataset}/{tier}",
            "dataset": dataset,
            "tier": tier,
            "local_index": local,
            "seed": seed,
        }

    # -- Items ----------------------------------------------------------------------------------

    def entry(self, split: str, index: int) -> dict[str, Any]:
        """reasoning-gym's item (question, answer, metadata) for a task."""
        dataset, tier, _, seed = self._locate(split, index)
        return _item(dataset, self.num_tiers, tier, seed, self.schedule)

    def pick_index(self, seed: Any, split: str = "train", dataset: str | None = None, tier: int | None = None) -> int:
        """A task index chosen by `seed`, within one dataset and/or tier if given; the same seed gives the same task."""
        per_tier = self._check_split(split)
        check_seed(seed)
        if dataset is not None and dataset not in self.datasets:
            raise TaskRequestError("dataset", f"unknown dataset {dataset!r}; this server has: {', '.join(self.datasets)}")
        if tier is not None:
            self.check_tier(tier)
        rng = random.Random(seed)
        datasets = [dataset] if dataset is not None else list(self.datasets)
        tiers = [tier] if tier is not None else list(range(self.num_tiers))
        block = self.datasets.index(rng.choice(datasets)) * self.num_tiers + rng.choice(tiers)
        return block * per_tier + rng.randrange(per_tier)


def check_seed(seed: Any) -> None:
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise TaskRequestError("seed", f"seed must be an integer, got {seed!r}")
