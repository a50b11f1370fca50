"""Peers: the task samplers other trainers ship, written from their public descriptions, over families.

Every peer draws family indices (``sample(n)``) and hears back each group's rewards (``update``);
none sees a latent probability except the oracle, a reference rather than a competitor. Where a
description leaves a choice open, the choice is stated in the class docstring.
"""

from __future__ import annotations

import random
from typing import Any, Sequence

from openenv_prime.samplers import CurriculumSampler, Task


class Peer:
    """Base: a seeded RNG over ``k`` families; successes are rewards >= ``success_reward``."""

    def __init__(self, k: int, group_size: int, seed: int, success_reward: float = 1.0) -> None:
        self.k = k
        self.group_size = group_size
        self.success_reward = success_reward
        self.rng = random.Random(seed)

    def bind(self, world: Any) -> None:
        """Only the oracle looks at the world."""

    def sample(self, n: int) -> list[int]:
        raise NotImplementedError

    def update(self, family: int, rewards: Sequence[float]) -> None:
        pass

    def predicted_signal(self) -> float | None:
        """The sampler's own mean predicted signal at draw time, if it makes one."""
        return None

    def success_share(self, rewards: Sequence[float]) -> float:
        threshold = self.success_reward
        return sum(1 for r in rewards if r >= threshold) / len(rewards)

    def weighted(self, weights: Sequence[float], n: int) -> list[int]:
        return self.rng.choices(range(self.k), weights, k=n)


class Uniform(Peer):
    def sample(self, n: int) -> list[int]:
        return [self.rng.randrange(self.k) for _ in range(n)]


class PrimeRLDifficultyPools(Peer):
    """prime-rl's ``DifficultyPoolSampler`` at its shipped defaults (559b447, ``default_difficulty_pools``):
    per family the latest group's mean reward; the first pool whose inclusive threshold holds it gives the
    family its weight: hard <= 0.25 -> 0.2, normal <= 0.75 -> 1.0, easy <= 1.0 -> 0.2; unseen -> 1.0."""

    POOLS = ((0.25, 0.2), (0.75, 1.0), (1.0, 0.2))
    UNSEEN = 1.0

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.weights = [self.UNSEEN] * self.k

    def sample(self, n: int) -> list[int]:
        return self.weighted(self.weights, n)

    def update(self, family: int, rewards: Sequence[float]) -> None:
        mean = sum(rewards) / len(rewards)
        self.weights[family] = next((w for t, w in self.POOLS if mean <= t), 0.0)


class FixedFractionPools(Peer):
    """Easy/normal/hard pools drawn with fixed fractions 10/80/10: per family the latest group's success
    share; > 0.9 easy, < 0.1 hard, else (and unseen) normal. An empty pool's share goes to the others."""

    FRACTIONS = {"easy": 0.1, "normal": 0.8, "hard": 0.1}

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.pool_of = ["normal"] * self.k

    def sample(self, n: int) -> list[int]:
        members: dict[str, list[int]] = {name: [] for name in self.FRACTIONS}
        for family, pool in enumerate(self.pool_of):
            members[pool].append(family)
        names = [name for name in self.FRACTIONS if members[name]]
        picks = self.rng.choices(names, [self.FRACTIONS[name] for name in names], k=n)
        return [self.rng.choice(members[name]) for name in picks]

    def update(self, family: int, rewards: Sequence[float]) -> None:
        share = self.success_share(rewards)
        self.pool_of[family] = "easy" if share > 0.9 else "hard" if share < 0.1 else "normal"


class Learnability(Peer):
    """Syllabus' ``Learnability``: weight p(1-p) of a running success mean (here an EMA, alpha 0.1, per group),
    unseen families at the top (p = 0.5); 5% of draws uniform so no family starves (our choice)."""

    ALPHA = 0.1
    UNIFORM = 0.05

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.p = [0.5] * self.k
        self.seen = [False] * self.k

    def sample(self, n: int) -> list[int]:
        weights = [p * (1 - p) for p in self.p]
        if sum(weights) <= 0:
            weights = [1.0] * self.k
        return [
            self.rng.randrange(self.k) if self.rng.random() < self.UNIFORM else self.weighted(weights, 1)[0]
            for _ in range(n)
        ]

    def update(self, family: int, rewards: Sequence[float]) -> None:
        share = self.success_share(rewards)
        if not self.seen[family]:
            self.p[family], self.seen[family] = share, True
        else:
            self.p[family] += self.ALPHA * (share - self.p[family])


class LearningProgress(Peer):
    """Syllabus' ``LearningProgress`` / TSCL: weight |fast - slow| where fast is an EMA (alpha 0.1) of the
    success share and slow an EMA of fast (alpha 0.1); unseen families first; 25% of draws uniform
    (Syllabus' ``uniform_prob``)."""

    ALPHA = 0.1
    UNIFORM = 0.25

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fast = [0.0] * self.k
        self.slow = [0.0] * self.k
        self.seen = [False] * self.k

    def sample(self, n: int) -> list[int]:
        unseen = [j for j in range(self.k) if not self.seen[j]]
        weights = [abs(f - s) for f, s in zip(self.fast, self.slow)]
        out = []
        for _ in range(n):
            if unseen:
                out.append(self.rng.choice(unseen))
            elif self.rng.random() < self.UNIFORM or sum(weights) <= 0:
                out.append(self.rng.randrange(self.k))
            else:
                out.append(self.weighted(weights, 1)[0])
        return out

    def update(self, family: int, rewards: Sequence[float]) -> None:
        share = self.success_share(rewards)
        if not self.seen[family]:
            self.fast[family] = self.slow[family] = share
            self.seen[family] = True
            return
        a = self.ALPHA
        self.fast[family] += a * (share - self.fast[family])
        self.slow[family] += a * (self.fast[family] - self.slow[family])


class Oracle(Peer):
    """A reference, not a competitor: draws each family in proportion to its true chance that the next
    group teaches (0 for dead and coin-flip families), read from the world at draw time."""

    def bind(self, world: Any) -> None:
        self.world = world
        self.predicted_sum = 0.0
        self.draws = 0

    def sample(self, n: int) -> list[int]:
        world = self.world
        weights = [
            world.signal_probability(p) if ok else 0.0 for p, ok in zip(world.probs(), world.learnable)
        ]
        if sum(weights) <= 0:
            weights = [1.0] * self.k
        picks = self.weighted(weights, n)
        self.predicted_sum += sum(weights[j] for j in picks)
        self.draws += n
        return picks

    def predicted_signal(self) -> float | None:
        return self.predicted_sum / self.draws if self.draws else None


class Curriculum(Peer):
    """This package's ``CurriculumSampler`` over one task per family, with the given settings."""

    def __init__(self, k: int, group_size: int, seed: int, success_reward: float = 1.0, **settings: Any) -> None:
        super().__init__(k, group_size, seed, success_reward)
        tasks = [Task("train", j, str(j)) for j in range(k)]
        self.sampler = CurriculumSampler(
            tasks, group_size=group_size, success_threshold=success_reward, seed=seed, **settings
        )

    def sample(self, n: int) -> list[int]:
        return [task.index for task in self.sampler.sample(n)]

    def update(self, family: int, rewards: Sequence[float]) -> None:
        self.sampler.update(str(family), rewards)

    def predicted_signal(self) -> float | None:
        return self.sampler.metrics(per_key=False)["predicted_signal"]
