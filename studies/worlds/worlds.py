"""Worlds: simulated policies whose skill per task family moves only when a group teaches it.

A family's skill is a latent logit z. Each family holds tasks; task t of family f succeeds with
probability sigmoid(z_f + d_t), where the offset d_t (fixed, drawn with the layout) makes some tasks of
a family harder than others. A group of G rollouts on a task gives G rewards. The group *teaches* only
when its family can learn and its successes differ (GRPO's advantage is zero otherwise): then z_f rises
by ``lr * 4 m (1 - m)`` (m = the group's success share), and other families may gain a ``transfer``
share of that. Samplers see only (task, rewards) and which family each task belongs to.

Family kinds: ``learn`` (skill moves), ``dead`` (p = 0 forever: never a success), ``coin`` (p = 0.5
forever whatever is trained: rewards vary, nothing is learned, e.g. tasks with a wrong or ambiguous
reference answer). Dead and coin families are *unlearnable*. A family's p is the mean p of its tasks;
mastery asks every learnable family for p >= 0.9. Each world is one small class: its layout
(``build``), and where it departs from the base (rewards, transfer, what happens between steps,
feedback delay, token cost).
"""

from __future__ import annotations

import math
import random
from typing import NamedTuple

LEARN, DEAD, COIN = "learn", "dead", "coin"


def sigmoid(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-x))


class Layout(NamedTuple):
    """What a sampler may know of a world: which family each task belongs to."""

    family_of: tuple[int, ...]  # task -> family
    members: tuple[tuple[int, ...], ...]  # family -> its tasks, in order


class World:
    """Unordered families of random difficulty, with dead and already-solved ones, 16 tasks each whose
    difficulty within the family spreads over +-2 logits; shared transfer."""

    name = "random"
    group_size = 8
    batch = 16  # groups per step; the sampler hears about a group only after its step
    budget = 48_000  # episodes (rollouts) per run
    lr = 0.08
    shared_transfer = 0.02  # share of a teaching group's gain that every other learnable family gets
    success_reward = 1.0  # rewards >= this count as a success (what binary samplers threshold on)
    tasks_per_family = 16
    task_spread = 2.0  # task offsets d_t ~ uniform(-spread, spread) logits

    def __init__(self, seed: int) -> None:
        self.kinds: list[str] = []
        self.logits: list[float] = []
        rng = random.Random(seed)
        self.build(rng)
        self.learnable = [kind == LEARN for kind in self.kinds]
        self.learnable_index = [i for i, ok in enumerate(self.learnable) if ok]
        per = self.tasks_per_family
        self.offsets = [[self.task_offset_draw(rng) for _ in range(per)] for _ in self.kinds]
        family_of = tuple(f for f in range(len(self.kinds)) for _ in range(per))
        members = tuple(tuple(range(f * per, (f + 1) * per)) for f in range(len(self.kinds)))
        self.layout = Layout(family_of, members)
        self.task_offset = [d for row in self.offsets for d in row]

    # -- layout ---------------------------------------------------------------------------------
    def build(self, rng: random.Random) -> None:
        self.add(LEARN, [rng.uniform(-6.0, 1.0) for _ in range(20)])
        self.add(LEARN, [rng.uniform(3.0, 5.0) for _ in range(4)])  # already solved
        self.add(DEAD, [-math.inf] * 4)

    def add(self, kind: str, logits: list[float]) -> None:
        self.kinds += [kind] * len(logits)
        self.logits += logits

    def task_offset_draw(self, rng: random.Random) -> float:
        """One task's offset d_t: uniform(-task_spread, task_spread) logits unless a world says otherwise."""
        spread = self.task_spread
        return rng.uniform(-spread, spread) if spread else 0.0

    # -- what the policy can do now -------------------------------------------------------------
    def task_p(self, task: int, logits: list[float] | None = None) -> float:
        """The success probability of ``task`` (with ``logits``, e.g. a step's snapshot, else the current)."""
        family = self.layout.family_of[task]
        kind = self.kinds[family]
        if kind != LEARN:
            return 0.5 if kind == COIN else 0.0
        return sigmoid((logits or self.logits)[family] + self.task_offset[task])

    def family_p(self, family: int) -> float:
        """The mean p of the family's tasks."""
        kind, z = self.kinds[family], self.logits[family]
        if kind != LEARN:
            return 0.5 if kind == COIN else 0.0
        offsets = self.offsets[family]
        if not self.task_spread:
            return sigmoid(z)
        return math.fsum(sigmoid(z + d) for d in offsets) / len(offsets)

    # -- one step -------------------------------------------------------------------------------
    def rewards(self, task: int, p: float, k: int, rng: random.Random) -> list[float]:
        """``k`` rewards of rollouts on ``task`` (successes are rewards >= ``success_reward``)."""
        return [1.0 if rng.random() < p else 0.0 for _ in range(k)]

    def tokens(self, task: int, k: int, rng: random.Random) -> float:
        """Tokens ``k`` rollouts of ``task`` cost; a flat 100 per rollout unless a world says otherwise."""
        return 100.0 * k

    def teach(self, task: int, successes: int) -> bool:
        """Apply one group's learning; True when it taught (a learnable family, successes that differ)."""
        g = self.group_size
        family = self.layout.family_of[task]
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
        """What happens to skill between steps (forgetting, jumps); ``trained``: the families trained."""

    def delay(self, rng: random.Random) -> int:
        """Steps after its own step at which a group's rewards reach the sampler (0: at the end of it)."""
        return 0

    def family_name(self, family: int) -> str:
        return f"{self.kinds[family]} {family}"

    def signal_probability(self, p: float) -> float:
        """The chance a group of this p has successes that differ (what an oracle knows)."""
        g = self.group_size
        return 1.0 - p**g - (1.0 - p) ** g


class OrderedTiers(World):
    """The tiers world (benchmarks' first simulator): 10 tiers of 50 alike tasks, each tier one logit
    harder (p = 0.88 down to 0.0009); a teaching group lifts the next tier by half its gain; rollouts on
    tier k cost 100 (k + 1) tokens +-50%."""

    name = "ordered"
    budget = 64_000
    lr = 0.05
    next_transfer = 0.5
    start_logit = 2.0
    logit_step = 1.0
    tiers = 10
    tasks_per_family = 50
    task_spread = 0.0

    def build(self, rng: random.Random) -> None:
        self.add(LEARN, [self.start_logit - self.logit_step * k for k in range(self.tiers)])

    def transfer(self, family: int, gain: float) -> None:
        if family + 1 < len(self.logits):
            self.logits[family + 1] += self.next_transfer * gain

    def tokens(self, task: int, k: int, rng: random.Random) -> float:
        tier = self.layout.family_of[task]
        return math.fsum(100.0 * (1 + tier) * (0.5 + rng.random()) for _ in range(k))


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

    def rewards(self, task: int, p: float, k: int, rng: random.Random) -> list[float]:
        partial = self.partial[self.layout.family_of[task]]
        out = []
        for _ in range(k):
            if rng.random() < p:
                out.append(1.0)
            else:
                out.append((partial if rng.random() < 0.5 else 0.0) + self.noise * rng.random())
        return out


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


class Calibrated(World):
    """The real runs' world, from `studies/worlds/calibration.py` on SmolLM2 runs (docs/samplers.md): three
    reasoning-gym datasets in three tiers, of which only tier 0 is in reach; a family's tasks differ widely (offsets
    ~ N(0, 3.5) logits: outcomes within a family correlate with rho about 0.5-0.7, as measured), so a family's groups
    are all-wrong or all-right more often than its mean p predicts; a short run (32 steps of 4 groups); learning fast
    enough that a family's signal runs out as it is trained on, as in the real runs, with a little shared transfer
    (the reply format)."""

    name = "calibrated"
    batch = 4
    budget = 32 * 4 * 8
    tasks_per_family = 40
    # Fitted on grids (docs/samplers.md) to the 38 real runs of the 10-seed comparison, measured by calibration.py: per
    # family, how its signal runs out over its own groups (products/0 from 0.73 to 0.26 in 40 groups), its signal share
    # and success rate, rho, and each sampler's signal share (the previous default, frontier, GRESO, uniform). The first
    # fit (lr 0.1, on five runs) matched the success rates and rho but not the running out: its families gave signal
    # at one rate however much they were trained on.
    task_sd = 3.5
    start = (-0.5, -1.5, -3.0)  # tier-0 logits of products, chain_sum, basic_arithmetic
    DATASETS = ("products", "chain_sum", "basic_arithmetic")
    lr = 0.3
    shared_transfer = 0.1

    def build(self, rng: random.Random) -> None:
        for z in self.start:
            self.add(LEARN, [z + rng.uniform(-0.5, 0.5)])
            self.add(DEAD, [-math.inf] * 2)

    def family_name(self, family: int) -> str:
        """As the real runs name it: dataset/tier (tier 0 in reach, 1 and 2 not)."""
        return f"{self.DATASETS[family // 3]}/{family % 3}"

    def task_offset_draw(self, rng: random.Random) -> float:
        return rng.gauss(0.0, self.task_sd)


WORLDS: dict[str, type[World]] = {
    cls.name: cls for cls in (OrderedTiers, World, Forgetting, Graded, Jumps, LateFeedback, CoinFlips, Calibrated)
}
