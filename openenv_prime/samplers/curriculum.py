"""The GRPO-signal curriculum: draw each key in proportion to the chance its next group has varying rewards.

Per key, decayed success and failure counts start from a Beta(1,1) prior (s = f = 1) and evolve as
``s <- gamma*s + successes``, ``f <- gamma*f + failures`` on each update of that key, so old evidence
and the prior fade. With ``p = s/(s+f)`` and group size G, the signal ``1 - p^G - (1-p)^G`` is the
probability that G binary rewards are not all equal. How a mode turns that into a weight is its rule in
``signals.py`` (``frontier``, the default: the signal times the square of the headroom ``min(1, 2(1-p))``, so draws
gather where the policy can nearly do the task; ``calibrated``, ``reach``, ``headroom``, ``binary`` and ``variance``
beside it, in one table there); ``epsilon`` is the floor that keeps every key drawn. Which rule is the default, and
why, is decided by held-out accuracy in real runs (docs/samplers.md, docs/mlx.md).

Within a key, ``within="signal"`` (the default with frontier, calibrated and reach) draws the key's shuffle
cycle thinned by each task's own evidence, which ``update(task, ...)`` reports (``taskevidence.py``):
tasks of a tier that are always or never solved are skipped in proportion; ``within="cycle"`` takes
every task in turn. In every mode the metric ``observed_signal`` counts groups whose rewards differ by
more than ``tolerance`` (what GRPO sees), beside ``predicted_signal``, the estimate at draw time.

Counts are stored as evidence apart from the prior (``s = gamma**n + evidence``) so that states of
several workers merge exactly (see ``merge.py``). Cost is counted and reported, never weighed: dividing
by cost starves the expensive hard keys a curriculum exists to reach.
"""

from __future__ import annotations

import math
from typing import Any, Iterable

from openenv_prime.samplers.cycles import KeyCycles
from openenv_prime.samplers.lineage import extended, history_digest, parse_lineage
from openenv_prime.samplers.pool import TaskPool
from openenv_prime.samplers.pooled import DEFAULT_TOLERANCE, FLOAT_STATS, INT_STATS, PooledSampler
from openenv_prime.samplers.rngstate import rng_to_json
from openenv_prime.samplers.signals import SIGNALS
from openenv_prime.samplers.statecheck import parse_list, section
from openenv_prime.samplers.sumtree import SumTree
from openenv_prime.samplers.task import Task
from openenv_prime.samplers.taskevidence import MAX_PROPOSALS, TaskEvidence

SIGNAL_MODES = tuple(SIGNALS)
WITHIN_MODES = ("signal", "cycle")
# Per-key learning state saved in state_dict["curriculum"], aligned with the pool's keys.
_EVIDENCE = ("successes", "failures", "spread", "flat", "expected", "predicted_sum")
# States saved before a column existed load with it at 0 (``expected``: the ratio starts from its prior).
_ADDED_EVIDENCE = ("expected",)
# The per-key lists a state's history digest covers (stats, then curriculum), as merge.py parses them too.
HISTORY_COLUMNS = (*INT_STATS, *FLOAT_STATS, "updates", *_EVIDENCE)


class CurriculumSampler(PooledSampler):
    # Settings that states saved before they existed held implicitly: such states load as saved with these.
    LEGACY_CONFIG = {"within": "cycle"}

    def __init__(
        self,
        tasks: Iterable[Task] | TaskPool,
        group_size: int = 8,
        gamma: float = 0.9,
        epsilon: float | None = None,
        success_threshold: float = 1.0,
        signal: str = "frontier",
        tolerance: float = DEFAULT_TOLERANCE,
        seed: int = 0,
        within: str | None = None,
    ) -> None:
        if isinstance(group_size, bool) or not isinstance(group_size, int) or group_size < 2:
            raise ValueError(f"group_size must be an int >= 2 (GRPO needs 2 rollouts to compare), got {group_size!r}")
        if not _is_number(gamma) or not 0.0 < gamma <= 1.0:
            raise ValueError(f"gamma must be in (0, 1] (1 = no decay), got {gamma!r}")
        if not _is_number(success_threshold) or not math.isfinite(success_threshold):
            raise ValueError(f"success_threshold must be a finite number, got {success_threshold!r}")
        if signal not in SIGNAL_MODES:
            raise ValueError(f"signal must be one of {SIGNAL_MODES}, got {signal!r}")
        rule = SIGNALS[signal]
        if epsilon is None:
            epsilon = rule.epsilon
        if within is None:
            within = rule.within
        if within not in WITHIN_MODES:
            raise ValueError(f"within must be one of {WITHIN_MODES}, got {within!r}")
        if within == "signal" and signal == "variance":
            raise ValueError(
                "within='signal' thins a key's tasks by their success rates, which signal='variance' does not "
                "estimate; use within='cycle' with it"
            )
        if not _is_number(epsilon) or not 0.0 < epsilon < math.inf:
            raise ValueError(f"epsilon must be a finite number > 0 (the floor that keeps every key drawn), got {epsilon!r}")
        if not _is_number(tolerance) or not 0.0 <= tolerance < math.inf:
            raise ValueError(f"tolerance must be a finite number >= 0, got {tolerance!r}")
        super().__init__(tasks, seed=seed)
        self.group_size = group_size
        self.gamma = float(gamma)
        self.epsilon = float(epsilon)
        self.success_threshold = float(success_threshold)
        self.signal = signal
        self.within = within
        self._rule = rule
        self._tolerance = float(tolerance)
        k = len(self.pool.keys)
        self._updates = [0] * k
        self._successes = [0.0] * k
        self._failures = [0.0] * k
        self._spread = [0.0] * k
        self._flat = [0.0] * k
        self._expected = [0.0] * k  # decayed sum of the binomial signal predicted for each group at its update
        self._predicted_sum = [0.0] * k
        self._cycles = KeyCycles(self.pool)
        self._task_evidence = TaskEvidence()
        self._lineage: list[str] = []  # digests of the shared states this history forked from (lineage.py)
        self._loaded_digest: str | None = None  # of the state last loaded; in memory only
        self._after_load()

    @property
    def tolerance(self) -> float:
        return self._tolerance

    # -- estimates ------------------------------------------------------------------------------
    def success_rate(self, key: str) -> float:
        """The decayed Beta(1,1) posterior mean of the key's success probability."""
        return self._p(self.pool.slot_of(key))

    def probabilities(self) -> dict[str, float]:
        """The chance that the next draw lands in each key (weights over their sum)."""
        weights = [self._tree[slot] for slot in range(len(self.pool.keys))]
        total = math.fsum(weights)
        return {key: w / total for key, w in zip(self.pool.keys, weights)}

    def _p(self, slot: int) -> float:
        prior = self.gamma ** self._updates[slot]
        s = prior + self._successes[slot]
        return s / (s + prior + self._failures[slot])

    def _estimate(self, slot: int) -> float:
        """The key's predicted chance that its next group has signal (by the mode's rule, signals.py)."""
        return self._rule.estimate(self, slot)

    def _group_signal(self, p: float) -> float:
        """The chance that a group of G rollouts at success rate p is not all equal."""
        g = self.group_size
        return max(0.0, 1.0 - p**g - (1.0 - p) ** g)

    def _weight(self, slot: int, estimate: float) -> float:
        """The key's sampling weight: the mode's rule (signals.py), then the floor."""
        return self._rule.weight(self, slot, estimate) + self.epsilon

    def _task_weight(self, p: float) -> float:
        """The weight of a success rate without the floor: what thins a key's tasks (taskevidence.py)."""
        return self._group_signal(p) * self._rule.headroom(p)

    # -- hooks ----------------------------------------------------------------------------------
    def _draw(self) -> int:
        tree = self._tree
        slot = tree.find(self._rng.random() * tree.total)
        # The key's estimate: a task's own is read after its record made it look promising, so it would be
        # biased upward (the winner's curse); the key's is not (docs/samplers.md, pred/obs).
        self._predicted_sum[slot] += self._signal_now[slot]
        position = self._cycles.next(slot, self._rng)
        return self._thinned(slot, position) if self._task_evidence else position

    def _thinned(self, slot: int, position: int) -> int:
        """The key's next task in its cycle, skipping tasks in proportion to how much less promising their
        own evidence makes them than the key (taskevidence.py)."""
        evidence = self._task_evidence
        p_key = self._p(slot)
        w_key = self._task_weight(p_key)
        for proposal in range(1, MAX_PROPOSALS + 1):
            p = evidence.estimate(position, p_key)
            if p is None:
                return position
            w = self._task_weight(p)
            if w >= w_key or proposal == MAX_PROPOSALS or self._rng.random() * w_key < w:
                return position
            position = self._cycles.next(slot, self._rng)
        raise AssertionError("unreachable: the last proposal is always kept")

    def _learn(self, slot: int, rewards: tuple[float, ...], signal: bool, position: int | None) -> None:
        g = self.gamma
        threshold = self.success_threshold
        successes = sum(1 for r in rewards if r >= threshold)
        if position is not None and self.within == "signal" and len(self.pool.members[slot]) > 1:
            self._task_evidence.add(position, successes, len(rewards) - successes, g)
        self._expected[slot] = g * self._expected[slot] + self._group_signal(self._p(slot))
        self._updates[slot] += 1
        self._successes[slot] = g * self._successes[slot] + successes
        self._failures[slot] = g * self._failures[slot] + (len(rewards) - successes)
        self._spread[slot] = g * self._spread[slot] + signal
        self._flat[slot] = g * self._flat[slot] + (not signal)
        self._refresh(slot)

    def _refresh(self, slot: int) -> None:
        estimate = self._estimate(slot)
        self._signal_now[slot] = estimate
        self._tree.set(slot, self._weight(slot, estimate))

    def _after_load(self) -> None:
        k = len(self.pool.keys)
        self._signal_now = [self._estimate(slot) for slot in range(k)]
        self._tree = SumTree(self._weight(slot, s) for slot, s in enumerate(self._signal_now))

    def _config(self) -> dict[str, Any]:
        return {
            "seed": self.seed,
            "group_size": self.group_size,
            "gamma": self.gamma,
            "epsilon": self.epsilon,
            "success_threshold": self.success_threshold,
            "signal": self.signal,
            "tolerance": self._tolerance,
            "within": self.within,
        }

    def _export(self) -> dict[str, Any]:
        learned: dict[str, Any] = {"updates": list(self._updates)}
        for name in _EVIDENCE:
            learned[name] = list(getattr(self, "_" + name))
        out = {"curriculum": learned, "cycles": self._cycles.to_json(), "lineage": list(self._lineage)}
        if self.within == "signal":
            out["task_evidence"] = self._task_evidence.to_json()
        return out

    def _import(self, state: dict[str, Any]) -> dict[str, Any]:
        learned = section(state, "curriculum")
        k = len(self.pool.keys)
        values: dict[str, Any] = {"_updates": parse_list(learned.get("updates"), "curriculum.updates", k, int)}
        for name in _EVIDENCE:
            values["_" + name] = evidence_column(learned, name, k)
        for slot, updates in enumerate(values["_updates"]):
            if self.gamma**updates > 0.0:
                continue  # the prior keeps every estimate defined
            for a, b in (("successes", "failures"), ("spread", "flat")):
                if values["_" + a][slot] + values["_" + b][slot] == 0.0:
                    raise ValueError(
                        f"state_dict fields curriculum.{a}[{slot}] and curriculum.{b}[{slot}] are both 0 after "
                        f"{updates} updates of key {self.pool.keys[slot]!r}: an updated key has evidence"
                    )
        values["_cycles"] = KeyCycles.from_json(state.get("cycles"), self.pool)
        values["_lineage"] = parse_lineage(state.get("lineage"))
        if self.within == "signal":
            values["_task_evidence"] = TaskEvidence.from_json(state.get("task_evidence", []), self.pool, self._key_of_task)
        elif state.get("task_evidence"):
            raise ValueError("state_dict field task_evidence holds per-task evidence, which within='cycle' does not keep")
        else:
            values["_task_evidence"] = TaskEvidence()
        return values

    def _note_load(self) -> None:
        self._loaded_digest = self._digest()

    def reseed(self, seed: int) -> None:
        """Restart the RNG from ``seed``, keeping all statistics, and record the state loaded before (or,
        without one, the current state) as where this worker forked: ``merge_state_dicts`` then counts
        that shared state once, and refuses to merge without it as ``base``."""
        fork = self._loaded_digest
        if fork is None and (any(self._updates) or any(self._draws) or self._lineage):
            fork = self._digest()
        super().reseed(seed)
        if fork is not None and self._lineage[-1:] != [fork]:
            self._lineage = extended(self._lineage, fork)

    def _digest(self) -> str:
        columns = {name: getattr(self, "_" + name) for name in HISTORY_COLUMNS}
        if self._task_evidence:
            columns["task_evidence"] = self._task_evidence.to_json()
        return history_digest(columns, rng_to_json(self._rng), self._lineage)

    def _total_metrics(self) -> dict[str, float]:
        draws = sum(self._draws)
        return {"predicted_signal": math.fsum(self._predicted_sum) / draws if draws else 0.0}

    def _key_metrics(self, slot: int) -> dict[str, float]:
        draws = self._draws[slot]
        return {
            "p": self._p(slot),
            "signal": self._signal_now[slot],
            "weight": self._tree[slot],
            "predicted_signal": self._predicted_sum[slot] / draws if draws else 0.0,
        }


def evidence_column(learned: dict[str, Any], name: str, k: int) -> list[float]:
    """One per-key evidence list of a saved state; a column added since (``_ADDED_EVIDENCE``) may be absent."""
    if name in _ADDED_EVIDENCE and name not in learned:
        return [0.0] * k
    return parse_list(learned.get(name), f"curriculum.{name}", k, float)


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)
