"""The one learning simulator: a sampler drives a world for a budget of episodes; what it learned, and at what cost.

Each step the sampler draws ``world.batch`` tasks and each gets a group of G rollouts at the policy of the
step's start; a sampler that screens tasks first (SPEED-RL) spends rollouts through ``rollout`` and hands
back the screening rewards with the task, and its group is completed to G. Every rollout, screening
included, is an episode of the budget: all samplers pay in the same currency. Rewards reach the sampler
after the step (or ``world.delay`` steps later).

Per run:
- area: the run's average of the mean p over learnable families, per episode (area under mean p);
- mastery: episodes until every learnable family has p >= 0.9 at once (inf if never), and the final mean p;
and over the learning phase (until mastery, or the whole run if never: after mastery nothing is left to
learn, and a sampler that finished sooner would be charged for it):
- signal: the share of episodes spent in groups that teach (a learnable family, successes that differ);
  without screening this is the share of groups that teach;
- wasted: the share of episodes on unlearnable families (dead, coin-flip);
- on_mastered: the share of episodes on tasks already at p >= 0.9;
- signal_per_kilotoken: groups that teach per 1,000 tokens;
and ``predicted`` / ``observed``: the sampler's own predicted signal (if it makes one) and the share of
trained groups whose successes differ, over the whole run.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from typing import Any, Callable

from studies.worlds.worlds import World


@dataclass
class Run:
    signal: float
    area: float
    mastery: float  # episodes; inf when never
    final_p: float
    wasted: float
    on_mastered: float
    signal_per_kilotoken: float
    predicted: float | None
    observed: float
    episodes: int  # spent in the whole run, screening included


@dataclass
class _Tally:
    episodes: int = 0
    tokens: float = 0.0
    teaching: int = 0
    wasted: int = 0
    on_mastered: int = 0

    def phase(self) -> "_Tally":
        return _Tally(self.episodes, self.tokens, self.teaching, self.wasted, self.on_mastered)


def simulate(world_cls: type[World], make: Callable[..., Any], seed: int, budget: int | None = None,
             stop_at_mastery: bool = False) -> Run:
    """One run of the sampler ``make(layout, group_size, seed, success_reward)`` in ``world_cls(seed)``."""
    world = world_cls(seed)
    g = world.group_size
    sampler = make(world.layout, g, seed, world.success_reward)
    sampler.bind(world)
    rng = random.Random(1_000_003 * seed + 17)  # the world's randomness: the same stream for every sampler
    budget = budget or world.budget
    family_of = world.layout.family_of
    learnable = world.learnable_index
    threshold = world.success_reward
    tally = _Tally()
    pending: dict[int, list[tuple[int, list[float]]]] = {}
    groups = differ = 0
    area = 0.0
    mastery = math.inf
    phase: _Tally | None = None
    snapshot: list[float] = list(world.logits)

    def spend(task: int, k: int) -> list[float]:
        p = world.task_p(task, snapshot)
        tally.episodes += k
        tally.tokens += world.tokens(task, k, rng)
        tally.wasted += k * (not world.learnable[family_of[task]])
        tally.on_mastered += k * (p >= 0.9)
        return world.rewards(task, p, k, rng)

    sampler.rollout = spend  # screening samplers spend episodes through this
    step = 0
    mean_p = 0.0
    while tally.episodes < budget:
        snapshot = list(world.logits)
        trained: set[int] = set()
        before = tally.episodes
        for item in sampler.sample(world.batch):
            task, prefix = item if isinstance(item, tuple) else (item, ())
            rewards = list(prefix) + spend(task, g - len(prefix))
            successes = sum(1 for r in rewards if r >= threshold)
            tally.teaching += world.teach(task, successes)
            differ += 0 < successes < g
            groups += 1
            trained.add(family_of[task])
            pending.setdefault(step + world.delay(rng), []).append((task, rewards))
        for task, rewards in pending.pop(step, ()):
            sampler.update(task, rewards)
        world.after_step(step, trained, rng)
        family_p = [world.family_p(j) for j in learnable]
        mean_p = math.fsum(family_p) / len(family_p)
        area += mean_p * (tally.episodes - before)
        step += 1
        if mastery == math.inf and min(family_p) >= 0.9:
            mastery = tally.episodes
            phase = tally.phase()
            if stop_at_mastery:
                break
    phase = phase or tally
    spent = phase.episodes or 1
    return Run(
        signal=phase.teaching * g / spent,
        area=area / max(tally.episodes, 1),
        mastery=mastery,
        final_p=mean_p,
        wasted=phase.wasted / spent,
        on_mastered=phase.on_mastered / spent,
        signal_per_kilotoken=1000.0 * phase.teaching / phase.tokens if phase.tokens else 0.0,
        predicted=sampler.predicted_signal(),
        observed=differ / groups if groups else 0.0,
        episodes=tally.episodes,
    )
