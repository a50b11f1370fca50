"""The online task selectors published in 2025, written from their papers and public code.

Each class states its rule, the settings the paper (or its released scripts) use, and where this
simulation has to depart from them (e.g. groups of 8 rollouts, as every sampler here trains; the worlds
give no offline per-task data). A *step* is one ``sample(batch)`` call; groups are reported back after
it (or later). Rules that keep statistics per prompt run per task (``level="tasks"``) and, as a variant,
per family; SEC is per category, i.e. per family. SPEED-RL and GRESO are screening / skip rules over
uniform draws: SPEED-RL's screening rollouts are spent through ``rollout`` and count as episodes.
"""

from __future__ import annotations

import math
from typing import Any, Sequence

from studies.worlds.peers import TASKS, Peer


class _EpochOrder:
    """Tasks in a fresh shuffled order each pass, as a shuffled dataloader hands prompts out."""

    def __init__(self, n: int, rng: Any) -> None:
        self.n, self.rng, self.order, self.at = n, rng, [], 0

    def next(self) -> int:
        if self.at == len(self.order):
            self.order = list(range(self.n))
            self.rng.shuffle(self.order)
            self.at = 0
        self.at += 1
        return self.order[self.at - 1]


class _ThompsonNearTarget(Peer):
    """Shared by BOTS and MoPPS: a Beta posterior per arm, Thompson samples, arms whose sample is nearest
    the target success rate. Per task: the batch's distinct tasks with the nearest samples among
    ``candidates()``; per family: each draw takes the family whose fresh sample is nearest (families are
    fewer than a batch, so draws repeat)."""

    TARGET = 0.5

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.alpha = [1.0] * self.k
        self.beta = [1.0] * self.k

    def candidates(self, n: int) -> list[int]:
        return list(range(self.k))

    def posterior(self, arm: int) -> tuple[float, float]:
        return self.alpha[arm], self.beta[arm]

    def pick(self, n: int) -> list[int]:
        beta = self.rng.betavariate
        target = self.TARGET
        if self.level == TASKS:
            scored = sorted((abs(beta(*self.posterior(a)) - target), a) for a in self.candidates(n))
            return [a for _, a in scored[:n]]
        out = []
        for _ in range(n):
            out.append(min(range(self.k), key=lambda a: abs(beta(*self.posterior(a)) - target)))
        return out


class BOTS(_ThompsonNearTarget):
    """BOTS, Bayesian Online Task Selection (Shen et al., arXiv 2510.26374; code: Trinity-RFT
    ``examples/bots/bots.yaml`` and ``trinity/buffer/selector``).

    Rule: per task a Beta(alpha, beta) success posterior, prior Beta(1, 1). Every step, for *every* task,
    ``alpha <- (1 - lam) alpha + lam alpha0 + (1 - rho) s + rho p~ m`` (beta alike with failures): the
    forgetting factor lam pulls every posterior back toward the prior each step; s is the explicit evidence
    (successes of the task's group this step; for an evaluated task p~ is its own pass rate, so its two
    terms add up to its counts), p~ m the implicit evidence for a task not evaluated, from a plug-in
    estimator of its pass rate. Selection: a Thompson sample per task; the batch is the tasks whose samples
    are nearest the target p* = 0.5 (``tau: 0``: top-k, no softmax; ``do_sample: true``).
    Settings (bots.yaml): lam = 0.1, rho = 0.1, target 0.5, tau 0, m = rollouts per task (16 there, the
    world's 8 here). Departure: the paper's plug-in interpolates between offline pass rates of two
    reference models (``feature_keys``), which no world offers any sampler; here the plug-in estimate of a
    task not evaluated is its family's latest pass rate (the mean over the family's groups heard in the
    last update that had any). Without implicit evidence, lam = 0.1 returns every task not drawn for a few
    steps to the flat prior, whose Thompson samples land near 0.5 as often as any, and the rule draws
    nearly at random. Per family: the same posterior per family, explicit evidence only (there is no
    coarser level to infer from), one draw at a time."""

    FORGET = 0.1  # lam
    IMPLICIT = 0.1  # rho

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.heard: dict[int, list[float]] = {}  # arm -> success shares heard since the last step
        self.family_rate: dict[int, float] = {}

    def pick(self, n: int) -> list[int]:
        self._step_update()
        return super().pick(n)

    def _step_update(self) -> None:
        """The step's generalized Bayesian update, for every arm."""
        lam, rho, m = self.FORGET, self.IMPLICIT, self.group_size
        heard, self.heard = self.heard, {}
        implicit = self.level == TASKS
        if implicit:
            by_family: dict[int, list[float]] = {}
            for arm, shares in heard.items():
                by_family.setdefault(self.layout.family_of[arm], []).extend(shares)
            for family, shares in by_family.items():
                self.family_rate[family] = sum(shares) / len(shares)
        family_of = self.layout.family_of
        for arm in range(self.k):
            a = (1 - lam) * self.alpha[arm] + lam
            b = (1 - lam) * self.beta[arm] + lam
            if arm in heard:
                for share in heard[arm]:
                    a += share * m
                    b += (1 - share) * m
            elif implicit and family_of[arm] in self.family_rate:
                rate = self.family_rate[family_of[arm]]
                a += rho * rate * m
                b += rho * (1 - rate) * m
            self.alpha[arm], self.beta[arm] = a, b

    def learn(self, arm: int, rewards: Sequence[float]) -> None:
        self.heard.setdefault(arm, []).append(self.success_share(rewards))


class MoPPS(_ThompsonNearTarget):
    """MoPPS, Model Predictive Prompt Selection (Qu et al., arXiv 2507.04632; code: thu-rllab/MoPPS
    ``recipe/ours/mopps.py`` and ``recipe/ours/scripts``).

    Rule: per prompt a Beta(alpha, beta) posterior of its success rate, prior Beta(1, 1), updated when the
    prompt's group comes back: ``alpha <- lam alpha + (1 - lam) alpha0 + s n``, ``beta <- lam beta + (1 -
    lam) beta0 + (1 - s) n`` (s the group's success rate, n its rollouts). Each step draws ts_ratio x batch
    candidate prompts uniformly, takes a Thompson sample of each, and trains on the batch whose samples are
    nearest the target 0.5 (``bandit_sample_strategy='topk'``).
    Settings (the released countdown and geo3k scripts): ts_ratio = 8, decay lam = 0.5, target 0.5, n = 8
    rollouts; the math scripts use ts_ratio 16 and no decay (lam = 1), which in these non-stationary worlds
    only slows the posterior down. Per family: every family is a candidate, one draw at a time."""

    DECAY = 0.5
    TS_RATIO = 8

    def candidates(self, n: int) -> list[int]:
        return self.rng.sample(range(self.k), min(self.k, self.TS_RATIO * n))

    def learn(self, arm: int, rewards: Sequence[float]) -> None:
        s, n, lam = self.success_share(rewards), len(rewards), self.DECAY
        self.alpha[arm] = lam * self.alpha[arm] + (1 - lam) * 1.0 + s * n
        self.beta[arm] = lam * self.beta[arm] + (1 - lam) * 1.0 + (1 - s) * n


class SEC(Peer):
    """SEC, Self-Evolving Curriculum (Chen et al., arXiv 2505.14970; the code released with it, ``sec/verl/
    verl/utils/auto_curriculum/priority.py``).

    Rule: a non-stationary bandit with one arm per category (here: per family). Each step samples the
    batch's categories from softmax(Q / tau) (Boltzmann); the reward of a category is the mean absolute GRPO
    advantage of its rollouts this step (advantage = (r - mean) / (std + 1e-6) within the group, std with
    Bessel's correction as in verl), and ``Q <- alpha r + (1 - alpha) Q`` (TD(0)) for the categories drawn.
    Settings (the paper's runs, as the released scripts give them): alpha = 0.5, Q starts at 0; tau = 1.0
    (Countdown), 0.4 (math), 0.2 (the 2-D curriculum). Here tau = 0.2, the strongest of the three in these
    worlds (5 seeds, area under mean p: random 0.789 / 0.770 / 0.748 for tau 0.2 / 0.4 / 1.0, ordered 0.874 /
    0.845 / 0.804). The released code also moves the categories not drawn toward 0; this follows the paper and
    leaves them."""

    ALPHA = 0.5
    TAU = 0.2

    def __init__(self, *args: Any, tau: float | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.tau = tau or self.TAU
        self.q = [0.0] * self.k
        self.rewards: dict[int, list[float]] = {}

    def pick(self, n: int) -> list[int]:
        for arm, values in self.rewards.items():  # the TD(0) update for the groups heard since the last step
            self.q[arm] = self.ALPHA * (sum(values) / len(values)) + (1 - self.ALPHA) * self.q[arm]
        self.rewards = {}
        top = max(self.q)
        return self.weighted([math.exp((q - top) / self.tau) for q in self.q], n)

    def learn(self, arm: int, rewards: Sequence[float]) -> None:
        self.rewards.setdefault(arm, []).append(mean_absolute_advantage(rewards))


def mean_absolute_advantage(rewards: Sequence[float]) -> float:
    """Mean |GRPO advantage| of one group: (r - mean) / (std + 1e-6), std with Bessel's correction."""
    n = len(rewards)
    mean = sum(rewards) / n
    std = math.sqrt(sum((r - mean) ** 2 for r in rewards) / (n - 1)) if n > 1 else 0.0
    return sum(abs(r - mean) for r in rewards) / n / (std + 1e-6)


class SPEEDRL(Peer):
    """SPEED-RL (Zhang et al., arXiv 2506.09016; code: Zanette-Labs/speed-rl ``verl/trainer/ppo/
    data_controller.py``, ``run_fast_rloo_7b.sh``), a screening rule over uniform draws.

    Rule: draw prompts uniformly (a shuffled pass over the data), screen each with n_init rollouts, keep
    those whose screening rewards are not all equal (pass rate strictly between 0 and 1), give each kept
    prompt n_continue more rollouts and train on all of them (screening rollouts included); repeat until
    the batch is full. Rejected screening rollouts are spent and teach nothing: here they count as episodes
    of the budget like every other rollout. Settings: n_init = 4 (the scripts and the default config);
    n_continue 20 (script) or 12 (config) there, here G - 4 = 4 so that trained groups have the world's 8
    rollouts like every other sampler's; at most 50 generation batches of 4 x batch prompts a step
    (``max_num_gen_batches`` 50, generation batch 64 for a batch of 16), after which the step trains on what
    passed. Stateless beyond its pass over the data, so it has no per-family variant: in these worlds, whose
    families hold equally many tasks, drawing a family first and then one of its tasks is the same draw."""

    level = TASKS
    SCREEN = 4
    MAX_SCREENED = 50 * 4  # per trained slot: 50 generation batches of 4 x batch prompts

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.order = _EpochOrder(self.k, self.rng)

    def sample(self, n: int) -> list[Any]:
        kept: list[tuple[int, tuple[float, ...]]] = []
        threshold = self.success_reward
        for _ in range(self.MAX_SCREENED * n):
            task = self.order.next()
            screen = self.rollout(task, self.SCREEN)
            if len({r >= threshold for r in screen}) > 1:
                kept.append((task, tuple(screen)))
                if len(kept) == n:
                    break
        return kept


class GRESO(Peer):
    """GRESO, selective rollouts (Zheng et al., arXiv 2506.02177; code: Infini-AI-Lab/GRESO
    ``verl/trainer/ttis/presampling_selector.py``, ``train-scripts/*_greso.sh``), a skip rule over uniform
    draws.

    Rule (``all_probabilistic``): prompts come in a shuffled pass over the data; before rollout a prompt is
    skipped, at no cost, with probability 1 - max(p_easy^c, 0.01) where c counts its latest consecutive
    groups with mean reward >= 0.98 (all correct), or, if its latest group had mean <= 0.11, with
    probability 1 - max(p_hard^c, 0.01), c its latest consecutive such groups. Drawing continues until the
    batch is full. After each step the exploration rates move by 0.01 within [0.05, 0.95]: down when the
    step's share of all-correct groups reached its target (target_zero_variance / 3) or of all-wrong groups
    reached theirs (target_zero_variance x 2/3), up otherwise.
    Settings (train-scripts): p_easy = p_hard = 0.5 at the start, target_zero_variance = 0.25. Per prompt as
    released; per family as a variant (one trace per family, read when any of its tasks comes up)."""

    START_P = 0.5
    TARGET_ZERO_VARIANCE = 0.25
    STEP, LOW, HIGH = 0.01, 0.05, 0.95

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.order = _EpochOrder(len(self.layout.family_of), self.rng)
        self.p_easy = self.p_hard = self.START_P
        self.easy_run = [0] * self.k  # trailing groups that were all correct
        self.hard_run = [0] * self.k  # trailing groups that were (nearly) all wrong
        self.heard = self.easy = self.hard = 0

    def sample(self, n: int) -> list[Any]:
        if self.heard:
            self.p_easy = self._move(self.p_easy, self.easy / self.heard >= self.TARGET_ZERO_VARIANCE / 3)
            self.p_hard = self._move(self.p_hard, self.hard / self.heard >= self.TARGET_ZERO_VARIANCE * 2 / 3)
            self.heard = self.easy = self.hard = 0
        out = []
        while len(out) < n:
            task = self.order.next()
            arm = task if self.level == TASKS else self.layout.family_of[task]
            if not self._skip(arm):
                out.append(task)
        return out

    def _move(self, p: float, reached: bool) -> float:
        return max(p - self.STEP, self.LOW) if reached else min(p + self.STEP, self.HIGH)

    def _skip(self, arm: int) -> bool:
        if self.easy_run[arm]:
            return self.rng.random() < 1 - max(self.p_easy ** self.easy_run[arm], 0.01)
        if self.hard_run[arm]:
            return self.rng.random() < 1 - max(self.p_hard ** self.hard_run[arm], 0.01)
        return False

    def learn(self, arm: int, rewards: Sequence[float]) -> None:
        mean = sum(rewards) / len(rewards)
        self.easy_run[arm] = self.easy_run[arm] + 1 if mean >= 0.98 else 0
        self.hard_run[arm] = self.hard_run[arm] + 1 if mean <= 0.11 else 0
        self.heard += 1
        self.easy += mean >= 0.98
        self.hard += mean <= 0.11
