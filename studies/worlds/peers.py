"""Peers: the task samplers other trainers ship, written from their public descriptions.

Every peer draws tasks (``sample(n)``) and hears back each group's rewards (``update(task, rewards)``);
it may know which family each task belongs to (the world's ``layout``), and none sees a latent
probability except the oracle, a reference rather than a competitor. A rule keeps its statistics per
*arm*: per family (then a draw picks a task of the family uniformly) or per task, as the rule ships
(``level``). Where a description leaves a choice open, the choice is stated in the class docstring.
The 2025 selectors (BOTS, MoPPS, SEC, SPEED-RL, GRESO) are in ``peers2025.py``.
"""

from __future__ import annotations

import random
from typing import Any, Callable, Sequence

from openenv_prime.samplers import CurriculumSampler, SequentialSampler, Task, UniformSampler
from studies.worlds.worlds import Layout

FAMILIES, TASKS = "families", "tasks"


class Peer:
    """Base: a seeded RNG over arms (families or tasks); successes are rewards >= ``success_reward``.

    Subclasses implement ``pick(n)`` (arms) and ``learn(arm, rewards)``; a family arm becomes a uniformly
    drawn task of that family. ``rollout(task, k)`` is set by the simulator for samplers that screen."""

    level = FAMILIES

    def __init__(self, layout: Layout, group_size: int, seed: int, success_reward: float = 1.0,
                 level: str | None = None) -> None:
        self.layout = layout
        self.level = level or self.level
        self.k = len(layout.members) if self.level == FAMILIES else len(layout.family_of)
        self.group_size = group_size
        self.success_reward = success_reward
        self.rng = random.Random(seed)
        self.rollout: Callable[[int, int], list[float]] | None = None

    def bind(self, world: Any) -> None:
        """Only the oracle looks at the world."""

    def sample(self, n: int) -> list[Any]:
        """``n`` tasks, or (task, screening rewards) pairs for tasks screened with ``rollout``."""
        if self.level == TASKS:
            return self.pick(n)
        members = self.layout.members
        return [self.rng.choice(members[arm]) for arm in self.pick(n)]

    def update(self, task: int, rewards: Sequence[float]) -> None:
        self.learn(task if self.level == TASKS else self.layout.family_of[task], rewards)

    def pick(self, n: int) -> list[int]:
        raise NotImplementedError

    def learn(self, arm: int, rewards: Sequence[float]) -> None:
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
    """Every task equally likely, with replacement."""

    level = TASKS

    def pick(self, n: int) -> list[int]:
        return [self.rng.randrange(self.k) for _ in range(n)]


class PrimeRLDifficultyPools(Peer):
    """prime-rl's ``DifficultyPoolSampler`` at its shipped defaults (559b447, ``default_difficulty_pools``):
    per task (prime-rl keys it by ``Task.key``) the latest group's mean reward; the first pool whose inclusive
    threshold holds it gives the task its weight: hard <= 0.25 -> 0.2, normal <= 0.75 -> 1.0, easy <= 1.0 ->
    0.2; unseen -> 1.0."""

    level = TASKS
    POOLS = ((0.25, 0.2), (0.75, 1.0), (1.0, 0.2))
    UNSEEN = 1.0

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.weights = [self.UNSEEN] * self.k

    def pick(self, n: int) -> list[int]:
        return self.weighted(self.weights, n)

    def learn(self, arm: int, rewards: Sequence[float]) -> None:
        mean = sum(rewards) / len(rewards)
        self.weights[arm] = next((w for t, w in self.POOLS if mean <= t), 0.0)


class FixedFractionPools(Peer):
    """Easy/normal/hard pools drawn with fixed fractions 10/80/10 (the older prime-rl buffer style, per
    task): per task the latest group's success share; > 0.9 easy, < 0.1 hard, else (and unseen) normal.
    An empty pool's share goes to the others."""

    level = TASKS
    FRACTIONS = {"easy": 0.1, "normal": 0.8, "hard": 0.1}

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.members: dict[str, set[int]] = {"easy": set(), "normal": set(range(self.k)), "hard": set()}
        self.pool_of = ["normal"] * self.k
        self.listed: dict[str, list[int]] = {}

    def pick(self, n: int) -> list[int]:
        names = [name for name in self.FRACTIONS if self.members[name]]
        picks = self.rng.choices(names, [self.FRACTIONS[name] for name in names], k=n)
        out = []
        for name in picks:
            if name not in self.listed:
                self.listed[name] = sorted(self.members[name])
            out.append(self.rng.choice(self.listed[name]))
        return out

    def learn(self, arm: int, rewards: Sequence[float]) -> None:
        share = self.success_share(rewards)
        pool = "easy" if share > 0.9 else "hard" if share < 0.1 else "normal"
        old = self.pool_of[arm]
        if pool != old:
            self.members[old].discard(arm)
            self.members[pool].add(arm)
            self.pool_of[arm] = pool
            self.listed.pop(old, None)
            self.listed.pop(pool, None)


class Learnability(Peer):
    """Syllabus' ``Learnability`` per family: weight p(1-p) of a running success mean (here an EMA, alpha
    0.1, per group), unseen families at the top (p = 0.5); 5% of draws uniform so no family starves (our
    choice)."""

    ALPHA = 0.1
    UNIFORM = 0.05

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.p = [0.5] * self.k
        self.seen = [False] * self.k

    def pick(self, n: int) -> list[int]:
        weights = [p * (1 - p) for p in self.p]
        if sum(weights) <= 0:
            weights = [1.0] * self.k
        return [
            self.rng.randrange(self.k) if self.rng.random() < self.UNIFORM else self.weighted(weights, 1)[0]
            for _ in range(n)
        ]

    def learn(self, arm: int, rewards: Sequence[float]) -> None:
        share = self.success_share(rewards)
        if not self.seen[arm]:
            self.p[arm], self.seen[arm] = share, True
        else:
            self.p[arm] += self.ALPHA * (share - self.p[arm])


class LearningProgress(Peer):
    """Syllabus' ``LearningProgress`` / TSCL per family: weight |fast - slow| where fast is an EMA (alpha 0.1)
    of the success share and slow an EMA of fast (alpha 0.1); unseen families first; 25% of draws uniform
    (Syllabus' ``uniform_prob``)."""

    ALPHA = 0.1
    UNIFORM = 0.25

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fast = [0.0] * self.k
        self.slow = [0.0] * self.k
        self.seen = [False] * self.k

    def pick(self, n: int) -> list[int]:
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

    def learn(self, arm: int, rewards: Sequence[float]) -> None:
        share = self.success_share(rewards)
        if not self.seen[arm]:
            self.fast[arm] = self.slow[arm] = share
            self.seen[arm] = True
            return
        a = self.ALPHA
        self.fast[arm] += a * (share - self.fast[arm])
        self.slow[arm] += a * (self.fast[arm] - self.slow[arm])


class Oracle(Peer):
    """A reference, not a competitor: draws each task in proportion to its true chance that the next group
    teaches (0 on dead and coin-flip families), read from the world at draw time."""

    level = TASKS

    def bind(self, world: Any) -> None:
        self.world = world
        self.predicted_sum = 0.0
        self.draws = 0

    def pick(self, n: int) -> list[int]:
        world = self.world
        family_of, learnable = self.layout.family_of, world.learnable
        weights = [
            world.signal_probability(world.task_p(t)) if learnable[family_of[t]] else 0.0 for t in range(self.k)
        ]
        if sum(weights) <= 0:
            weights = [1.0] * self.k
        picks = self.weighted(weights, n)
        self.predicted_sum += sum(weights[j] for j in picks)
        self.draws += n
        return picks

    def predicted_signal(self) -> float | None:
        return self.predicted_sum / self.draws if self.draws else None


def pool_tasks(layout: Layout, order: str = "families") -> list[Task]:
    """The world's tasks as package ``Task``s keyed by family; ``order="shuffled"`` shuffles the pool (seed 0)."""
    tasks = [Task("train", t, str(f)) for t, f in enumerate(layout.family_of)]
    if order == "shuffled":
        random.Random(0).shuffle(tasks)
    return tasks


class Package(Peer):
    """One of this package's samplers (``openenv_prime.samplers``) over the world's tasks, keyed by family:
    the same objects a trainer drives."""

    level = TASKS

    def __init__(self, layout: Layout, group_size: int, seed: int, success_reward: float = 1.0, *,
                 build: Callable[[list[Task], int, int, float], Any], order: str = "families") -> None:
        super().__init__(layout, group_size, seed, success_reward)
        self.tasks = pool_tasks(layout, order)
        self.by_index = {task.index: task for task in self.tasks}
        self.sampler = build(self.tasks, group_size, seed, success_reward)

    def pick(self, n: int) -> list[int]:
        return [task.index for task in self.sampler.sample(n)]

    def update(self, task: int, rewards: Sequence[float]) -> None:
        self.sampler.update(self.by_index[task], rewards)  # the task, as the trainers report it

    def predicted_signal(self) -> float | None:
        return self.sampler.metrics(per_key=False).get("predicted_signal")


def curriculum(**settings: Any) -> Callable[..., Package]:
    """This package's ``CurriculumSampler`` with ``settings``, as a peer factory."""
    def build(tasks: list[Task], g: int, seed: int, success: float) -> CurriculumSampler:
        return CurriculumSampler(tasks, group_size=g, success_threshold=success, seed=seed, **settings)
    return lambda layout, g, seed, success: Package(layout, g, seed, success, build=build)


def sequential(order: str = "families") -> Callable[..., Package]:
    return lambda layout, g, seed, success: Package(
        layout, g, seed, success, build=lambda tasks, *_: SequentialSampler(tasks), order=order
    )


def uniform(over: str = "tasks") -> Callable[..., Package]:
    return lambda layout, g, seed, success: Package(
        layout, g, seed, success, build=lambda tasks, _g, seed, _s: UniformSampler(tasks, over=over, seed=seed)
    )
