"""The curriculum's signal modes: one rule each, for how a key's next group is predicted to have signal and how that
prediction becomes the key's sampling weight.

Every rule reads a key's decayed evidence from the sampler (:class:`Evidence`): ``p``, its success rate (a Beta(1,1)
prior that fades with the evidence), and ``signal(p) = 1 - p^G - (1-p)^G``, the chance that a group of G binary
rewards is not all equal. A rule gives ``estimate`` (logged as ``predicted_signal``, and what ``calibrated`` checks
against the groups) and ``weight`` (before the floor ``epsilon``, which keeps every key drawn):

| mode | estimate | weight | floor | within a key |
|---|---|---|---|---|
| ``frontier`` (default) | ``signal(p)`` | ``signal(p) * h(p)^2`` | 0.005 | ``signal`` |
| ``calibrated`` | ``signal(p) * min(1, r)`` | ``signal(p) * min(1, r / FULL_RATIO) * h(p)^2`` | 0.005 | ``signal`` |
| ``reach`` | as calibrated | as calibrated, the factor cubed for a key without a success lately | 0.005 | ``signal`` |
| ``headroom`` | ``signal(p)`` | ``signal(p) * h(p)`` | 0.005 | ``cycle`` |
| ``binary`` | ``signal(p)`` | ``signal(p)`` | 0.02 | ``cycle`` |
| ``variance`` | the decayed share of groups with spread | the same | 0.02 | ``cycle`` |

``h(p) = min(1, 2(1-p))`` is the headroom: a key past p = 0.5 counts in proportion to the failures it has left, so
draws gather where the policy can nearly do the task. ``r`` is a key's observed signal over the binomial signal
predicted for its groups (tasks of a real family differ, so their groups are all-equal more often than the formula
says). Why each rule exists and how they compare: docs/samplers.md.
"""

from __future__ import annotations

from typing import ClassVar, Protocol

CALIBRATION_PRIOR = 0.1
"""``calibrated``: the prior, in groups at ratio 1, of a key's observed-over-predicted signal ratio."""
FULL_RATIO = 0.5
"""``calibrated``: the ratio from which a key keeps its whole frontier weight."""
UNREACHED_SUCCESSES = 0.5
"""``reach``: a key whose decayed successes are under this count has not been reached lately."""
UNREACHED_POWER = 3
"""``reach``: the power of such a key's calibration factor."""


class Evidence(Protocol):
    """What a rule reads of one key: the curriculum sampler's per-key state."""

    gamma: float

    def _p(self, slot: int) -> float: ...
    def _group_signal(self, p: float) -> float: ...


class SignalRule:
    """One mode; a rule keeps no state (the sampler's evidence is passed in)."""

    name: ClassVar[str]
    epsilon: ClassVar[float] = 0.005  # the default floor
    within: ClassVar[str] = "cycle"  # the default way of choosing a task within the key
    headroom_power: ClassVar[int] = 0  # the power of h(p) in the weight, and in a task's weight within its key

    def headroom(self, p: float) -> float:
        return min(1.0, 2.0 * (1.0 - p)) ** self.headroom_power if self.headroom_power else 1.0

    def estimate(self, key: Evidence, slot: int) -> float:
        return key._group_signal(key._p(slot))

    def weight(self, key: Evidence, slot: int, estimate: float) -> float:
        return estimate * self.headroom(key._p(slot))


class Binary(SignalRule):
    name = "binary"
    epsilon = 0.02


class Headroom(SignalRule):
    name = "headroom"
    headroom_power = 1


class Frontier(SignalRule):
    name = "frontier"
    within = "signal"
    headroom_power = 2


class Calibrated(Frontier):
    name = "calibrated"

    def estimate(self, key: Evidence, slot: int) -> float:
        return key._group_signal(key._p(slot)) * min(1.0, self.ratio(key, slot))

    def weight(self, key: Evidence, slot: int, estimate: float) -> float:
        p = key._p(slot)
        return key._group_signal(p) * self.factor(key, slot) * self.headroom(p)

    @staticmethod
    def ratio(key, slot: int) -> float:
        """The key's groups' observed signal over the binomial signal predicted for them, with a prior of
        CALIBRATION_PRIOR groups at ratio 1 that fades like the other evidence."""
        prior = CALIBRATION_PRIOR * key.gamma ** key._updates[slot]
        return (prior + key._spread[slot]) / (prior + key._expected[slot])

    def factor(self, key, slot: int) -> float:
        return min(1.0, self.ratio(key, slot) / FULL_RATIO)


class Reach(Calibrated):
    name = "reach"

    def factor(self, key, slot: int) -> float:
        factor = super().factor(key, slot)
        if key._updates[slot] and key._successes[slot] < UNREACHED_SUCCESSES:
            return factor**UNREACHED_POWER
        return factor


class Variance(SignalRule):
    """Graded rewards: the decayed share of groups whose reward spread exceeds the tolerance."""

    name = "variance"
    epsilon = 0.02

    def estimate(self, key, slot: int) -> float:
        prior = key.gamma ** key._updates[slot]
        hit = prior + key._spread[slot]
        return hit / (hit + prior + key._flat[slot])


SIGNALS: dict[str, SignalRule] = {rule.name: rule for rule in (
    Calibrated(), Reach(), Frontier(), Headroom(), Binary(), Variance())}
"""Every mode by the name ``CurriculumSampler(signal=...)`` takes."""
