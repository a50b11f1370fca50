"""Worlds: simulated policies whose skill per task family moves only when a group teaches it.

A family's skill is a latent logit z; its success probability is sigmoid(z). A group of G rollouts on a
family gives G rewards. The group *teaches* only when the family can learn and its successes differ
(GRPO's advantage is zero otherwise): then z rises by ``lr * 4 m (1 - m)`` (m = the group's success
share), and other families may gain a ``transfer`` share of that. Samplers see only (family, rewards).

Family kinds: ``learn`` (skill moves), ``dead`` (p = 0 forever: never a success), ``coin`` (p = 0.5
forever whatever is trained: rewards vary, nothing is learned, e.g. a task with a wrong reference
answer). Dead and coin families are *unlearnable*; mastery asks every learnable family for p >= 0.9.
Each world is one small class: its layout (``build``), and where it departs from the base (rewards,
transfer, what happens between steps, feedback delay).
"""

from __future__ import annotations

import math
import random

LEARN, DEAD, COIN = "learn", "dead", "coin"


def sigmoid(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-x))


class World:
    """Unordered families of random difficulty, with dead and already-solved ones; shared transfer."""

    name = "random"
    group_size = 8
    batch = 16  # groups per step; the sampler hears about a group only after its step
    budget = 48_000  # episodes (rollouts) per run
    lr = 0.08
    shared_transfer = 0.02  # share of a teaching group's gain that every other learnable family gets
    success_reward = 1.0  # rewards >= this count as a success (what binary samplers threshold on)

    def __init__(self, seed: int) -> None:
        self.kinds: list[str] = []
        self.logits: list[float] = []
        self.build(random.Random(seed))
        self.learnable = [kind == LEARN for kind in self.kinds]
        self.learnable_index = [i for i, ok in enumerate(self.learnable) if ok]

    # -- layout ---------------------------------------------------------------------------------
    def build(self, rng: random.Random) -> None:
        self.add(LEARN, [rng.uniform(-6.0, 1.0) for _ in range(20)])
        self.add(LEARN, [rng.uniform(3.0, 5.0) for _ in range(4)])  # already solved
        self.add(DEAD, [-math.inf] * 4)

    def add(self, kind: str, logits: list[float]) -> None:
        self.kinds += [kind] * len(logits)
        self.logits += logits

    # -- one step -------------------------------------------------------------------------------
    def probs(self) -> list[float]:
        return [0.5 if kind == COIN else (0.0 if z == -math.inf else sigmoid(z)) for kind, z in zip(self.kinds, self.logits)]

    def rewards(self, family: int, p: float, rng: random.Random) -> tuple[list[float], int]:
        """G rewards of one group, and how many of them are successes."""
        rewards = [1.0 if rng.random() < p else 0.0 for _ in range(self.group_size)]
        return rewards, int(sum(rewards))

    def teach(self, family: int, successes: int) -> bool:
        """Apply one group's learning; True when it taught (a learnable family, successes that differ)."""
        g = self.group_size
        if not self.learnable[family] or successes in (0, g):
            return False
        m = successes / g
        gain = self.lr * 4 * m * (1 - m)
        self.logits[family] += gain
        self.transfer(family, gain)
        return True

    def transfer(self, family: int, gain: float) -> None:
        share = self.shared_transfer * gain
        if share:
            for j in self.learnable_index:
                if j != family:
                    self.logits[j] += share

    def after_step(self, step: int, trained: set[int], rng: random.Random) -> None:
        """What happens to skill between steps (forgetting, jumps); nothing by default."""

    def delay(self, rng: random.Random) -> int:
        """Steps after its own step at which a group's rewards reach the sampler (0: at the end of it)."""
        return 0

    def signal_probability(self, p: float) -> float:
        """The chance a group of this p has successes that differ (what an oracle knows)."""
        g = self.group_size
        return 1.0 - p**g - (1.0 - p) ** g


class OrderedTiers(World):
    """Today's simulator world: 10 tiers, each one logit harder; a teaching group lifts the next tier by half its gain."""

    name = "ordered"
    budget = 64_000
    lr = 0.05
    next_transfer = 0.5

    def build(self, rng: random.Random) -> None:
        self.add(LEARN, [2.0 - k for k in range(10)])

    def transfer(self, family: int, gain: float) -> None:
        if family + 1 < len(self.logits):
            self.logits[family + 1] += self.next_transfer * gain


class Forgetting(World):
    """Random families whose skill fades back toward where it started on every step they are not trained."""

    name = "forgetting"
    forget = 0.004  # share of the skill gained that is lost per untrained step

    def build(self, rng: random.Random) -> None:
        super().build(rng)
        self.start = list(self.logits)

    def after_step(self, step: int, trained: set[int], rng: random.Random) -> None:
        keep = 1.0 - self.forget
        for j in self.learnable_index:
            if j not in trained and self.logits[j] > self.start[j]:
                self.logits[j] = self.start[j] + (self.logits[j] - self.start[j]) * keep


class Graded(World):
    """Partial credit: a failure scores the family's partial level on some rollouts, plus format noise.

    Noise and partial credit never reach ``success_reward``, so they never turn into success; dead
    families still show a reward spread on every group (the trap for a sampler that chases spread).
    """

    name = "graded"
    noise = 0.05

    def build(self, rng: random.Random) -> None:
        super().build(rng)
        self.partial = [rng.uniform(0.1, 0.5) for _ in self.kinds]

    def rewards(self, family: int, p: float, rng: random.Random) -> tuple[list[float], int]:
        partial = self.partial[family]
        rewards, successes = [], 0
        for _ in range(self.group_size):
            if rng.random() < p:
                rewards.append(1.0)
                successes += 1
            else:
                rewards.append((partial if rng.random() < 0.5 else 0.0) + self.noise * rng.random())
        return rewards, successes


class Jumps(World):
    """Random families whose skill now and then jumps up (a sudden insight) or falls (a regression) by 3 logits."""

    name = "jumps"
    every = 40  # steps between events
    size = 3.0

    def build(self, rng: random.Random) -> None:
        super().build(rng)
        learnable = [i for i, kind in enumerate(self.kinds) if kind == LEARN]
        # Drawn with the layout, so every sampler of a seed meets the same events at the same steps.
        self.events = [(rng.choice(learnable), rng.choice((self.size, -self.size))) for _ in range(1000)]

    def after_step(self, step: int, trained: set[int], rng: random.Random) -> None:
        if step % self.every == self.every - 1:
            family, change = self.events[(step // self.every) % len(self.events)]
            self.logits[family] += change


class LateFeedback(World):
    """Random families; each group's rewards reach the sampler 1-4 steps after its own step."""

    name = "late"

    def delay(self, rng: random.Random) -> int:
        return rng.randint(1, 4)


class CoinFlips(World):
    """The hardest for a signal-seeking rule: besides dead families, coin-flip families whose rewards vary on
    nearly every group (p = 0.5) but teach nothing, e.g. tasks with a wrong or ambiguous reference answer."""

    name = "coinflip"

    def build(self, rng: random.Random) -> None:
        super().build(rng)
        self.add(COIN, [0.0] * 4)


WORLDS: dict[str, type[World]] = {
    cls.name: cls for cls in (OrderedTiers, World, Forgetting, Graded, Jumps, LateFeedback, CoinFlips)
}
