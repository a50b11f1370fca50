"""What every sampler shares: the pool, update validation, group accounting, metrics and the state envelope.

Subclasses implement drawing (``_draw``), optional learning from groups (``_learn``), and their part of
the state (``_export`` / ``_import``). ``_import`` only parses (``statecheck.py``); the parsed values
and the caches ``_after_load`` derives from them are built on a shallow copy of the sampler, which
replaces the sampler's attributes only once all of it succeeded: a rejected ``load_state_dict``
leaves the sampler exactly as it was. ``_after_load`` must therefore assign new objects, never
mutate shared ones.
"""

from __future__ import annotations

import copy
import math
import random
from typing import Any, Iterable, Sequence

from openenv_prime.samplers.keymetrics import flat_key_metrics, most_drawn
from openenv_prime.samplers.pool import TaskPool
from openenv_prime.samplers.rngstate import rng_from_json, rng_to_json
from openenv_prime.samplers.sparse import expand
from openenv_prime.samplers.statecheck import SAMPLER_STATE_VERSION, parse_list, section
from openenv_prime.samplers.task import Task
from openenv_prime.samplers.validation import CostsMismatchError, check_count, check_group, has_spread

DEFAULT_TOLERANCE = 1e-6
INT_STATS = ("draws", "episodes", "groups", "groups_with_signal")
FLOAT_STATS = ("cost",)


class PooledSampler:
    """Base of the samplers: a fixed task pool, per-key group accounting, JSON state with RNG."""

    # Settings that states saved before they existed held implicitly (``check_envelope``).
    LEGACY_CONFIG: dict[str, Any] = {}

    def __init__(self, tasks: Iterable[Task] | TaskPool, *, seed: int = 0) -> None:
        self.pool = tasks if isinstance(tasks, TaskPool) else TaskPool(tasks)
        if isinstance(seed, bool) or not isinstance(seed, int):
            raise TypeError(f"seed must be an int, got {seed!r}")
        self.seed = seed
        self._rng = random.Random(seed)
        k = len(self.pool.keys)
        self._draws = [0] * k
        self._episodes = [0] * k
        self._groups = [0] * k
        self._groups_with_signal = [0] * k
        self._cost = [0.0] * k
        self._tolerance = DEFAULT_TOLERANCE
        self._costs_reported: bool | None = None  # whether the groups so far came with costs (None: no group yet)
        self._key_of_task = [0] * len(self.pool)
        for slot, members in enumerate(self.pool.members):
            for position in members:
                self._key_of_task[position] = slot

    # -- the TaskSampler protocol ---------------------------------------------------------------
    def sample(self, n: int) -> list[Task]:
        n = check_count(n)
        tasks = self.pool.tasks
        draws = self._draws
        key_of = self._key_of_task
        out = []
        for _ in range(n):
            position = self._draw()
            draws[key_of[position]] += 1
            out.append(tasks[position])
        return out

    def update(self, key: str | Task, rewards: Sequence[float], costs: Sequence[float] | None = None) -> None:
        """Report one scored group of ``key``, or of a task of this pool (``update(task, ...)``, which also
        tells samplers that keep evidence per task which task it was)."""
        position = None
        slot = self.pool.key_index.get(key) if type(key) is str else None
        if slot is None:
            if isinstance(key, Task):
                position = self.pool.position_of(key)  # raises the error that names the task
                slot = self._key_of_task[position]
            else:
                slot = self.pool.slot_of(key)  # raises the error that names the key
        rewards_t, costs_t = check_group(rewards, costs)
        reported = costs_t is not None
        if self._costs_reported is not None and reported != self._costs_reported:
            raise CostsMismatchError(
                f"this group {'has' if reported else 'has no'} costs and the earlier ones "
                f"{'had none' if reported else 'had them'}: report costs for every group or for none, or the "
                "cost totals (signal_per_cost) would count some groups and not others")
        self._costs_reported = reported
        signal = has_spread(rewards_t, self._tolerance)
        self._learn(slot, rewards_t, signal, position)
        self._episodes[slot] += len(rewards_t)
        self._groups[slot] += 1
        self._groups_with_signal[slot] += signal
        if costs_t is not None:
            self._cost[slot] += math.fsum(costs_t)

    def state_dict(self) -> dict[str, Any]:
        state = {
            "version": SAMPLER_STATE_VERSION,
            "sampler": type(self).__name__,
            "pool": pool_summary(self.pool),
            "config": self._config(),
            "rng": rng_to_json(self._rng),
            "stats": {
                "draws": list(self._draws),
                "episodes": list(self._episodes),
                "groups": list(self._groups),
                "groups_with_signal": list(self._groups_with_signal),
                "cost": list(self._cost),
            },
        }
        state.update(self._export())
        return state

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Load a ``state_dict()`` (or its ``sparse.compact`` form) whole, or raise (ValueError naming
        the field) and change nothing."""
        state = expand(state)
        check_envelope(state, type(self).__name__, self.pool, self._config(), self.LEGACY_CONFIG)
        values = {"_rng": rng_from_json(state.get("rng"))}
        stats = section(state, "stats")
        k = len(self.pool.keys)
        for name in INT_STATS:
            values["_" + name] = parse_list(stats.get(name), f"stats.{name}", k, int)
        for name in FLOAT_STATS:
            values["_" + name] = parse_list(stats.get(name), f"stats.{name}", k, float)
        for slot, (groups, signal) in enumerate(zip(values["_groups"], values["_groups_with_signal"])):
            if signal > groups:
                raise ValueError(f"state_dict field stats.groups_with_signal[{slot}] = {signal} exceeds stats.groups[{slot}] = {groups}")
        values.update(self._import(state))
        candidate = copy.copy(self)
        candidate.__dict__.update(values)
        try:
            candidate._after_load()
        except ArithmeticError as exc:  # a combination of valid fields the sampler cannot use
            raise ValueError(f"state_dict fields are inconsistent: {exc!r}") from None
        candidate._note_load()
        candidate._costs_reported = None  # a state keeps no flag: the check holds from the load on
        self.__dict__.update(candidate.__dict__)

    def reseed(self, seed: int) -> None:
        """Restart the RNG from ``seed``, keeping all statistics: give each worker its own stream
        after loading one shared (e.g. merged) state."""
        if isinstance(seed, bool) or not isinstance(seed, int):
            raise TypeError(f"seed must be an int, got {seed!r}")
        self._rng = random.Random(seed)

    def metrics(self, *, per_key: bool = True) -> dict[str, float]:
        """Totals, and (unless ``per_key=False``) every key's ``key_metrics`` under the flat names
        ``key/<key>/<name>``: what a framework that logs flat names gets."""
        episodes = sum(self._episodes)
        groups = sum(self._groups)
        with_signal = sum(self._groups_with_signal)
        cost = math.fsum(self._cost)
        out: dict[str, float] = {
            "draws": float(sum(self._draws)),
            "episodes": float(episodes),
            "cost": cost,
            "groups": float(groups),
            "groups_with_signal": float(with_signal),
            "observed_signal": with_signal / groups if groups else 0.0,
            "signal_per_episode": with_signal / episodes if episodes else 0.0,
            "signal_per_cost": with_signal / cost if cost > 0 else 0.0,
        }
        out.update(self._total_metrics())
        if per_key:
            out.update(flat_key_metrics(self.key_metrics()))
        return out

    def key_metrics(self, keys: Iterable[str] | None = None, *, top: int | None = None) -> dict[str, dict[str, float]]:
        """Per-key metrics as ``{key: {name: value}}``: for ``keys`` (unknown ones raise, naming the key),
        for the ``top`` most drawn keys (most first, ties in pool order), or for every key in pool order."""
        if keys is not None:
            slots = [self.pool.slot_of(key) for key in keys]
        elif top is not None:
            if isinstance(top, bool) or not isinstance(top, int) or top < 0:
                raise ValueError(f"key_metrics(top=...) needs an int >= 0 (how many keys), got {top!r}")
            slots = most_drawn(self._draws, top)
        else:
            slots = range(len(self.pool.keys))
        draws = sum(self._draws)
        out = {}
        for slot in slots:
            g = self._groups[slot]
            values = {
                "draw_share": self._draws[slot] / draws if draws else 0.0,
                "episodes": float(self._episodes[slot]),
                "cost": self._cost[slot],
                "observed_signal": self._groups_with_signal[slot] / g if g else 0.0,
            }
            values.update(self._key_metrics(slot))
            out[self.pool.keys[slot]] = values
        return out

    # -- hooks --------------------------------------------------------------------------------
    def _draw(self) -> int:
        raise NotImplementedError

    def _learn(self, slot: int, rewards: tuple[float, ...], signal: bool, position: int | None) -> None:
        """Use one validated group (of the task at pool ``position``, when the caller said which); must not raise."""

    def _config(self) -> dict[str, Any]:
        return {"seed": self.seed}

    def _export(self) -> dict[str, Any]:
        return {}

    def _import(self, state: dict[str, Any]) -> dict[str, Any]:
        return {}

    def _after_load(self) -> None:
        """Rebuild caches derived from the loaded attributes."""

    def _note_load(self) -> None:
        """Record that a state was loaded (after it passed every check)."""

    def _total_metrics(self) -> dict[str, float]:
        return {}

    def _key_metrics(self, slot: int) -> dict[str, float]:
        return {}


def check_envelope(state: Any, sampler: str, pool: TaskPool, config: dict[str, Any],
                   legacy: dict[str, Any] | None = None) -> None:
    """Refuse a state from another sampler class, version, task pool or configuration; a saved config
    without a setting of ``legacy`` (from before that setting existed) counts as holding its value there."""
    if not isinstance(state, dict):
        raise TypeError(f"load_state_dict needs the dict from state_dict(), got {type(state).__name__}")
    if state.get("sampler") != sampler:
        raise ValueError(f"this state was saved by {state.get('sampler')!r}, not by {sampler}")
    version = state.get("version")
    if version == 1:
        raise ValueError(
            f"state version 1 is from an older openenv-prime (it stores every key's shuffle order in full); this "
            f"one reads version {SAMPLER_STATE_VERSION} (a seed and a position per key) and cannot continue a version 1 run "
            f"exactly. Start fresh, or convert with openenv_prime.samplers.upgrade_state_dict(state): it keeps "
            f"every statistic and the RNG and restarts each key's shuffle cycle"
        )
    if version != SAMPLER_STATE_VERSION:
        raise ValueError(f"state version {version!r} is not supported (expected {SAMPLER_STATE_VERSION})")
    saved_pool = state.get("pool")
    if not isinstance(saved_pool, dict) or saved_pool.get("fingerprint") != pool.fingerprint:
        raise ValueError(
            "this state was saved on a different task pool (fingerprint mismatch): build the sampler "
            "from the same tasks, in the same order, with the same keys"
        )
    if saved_pool != pool_summary(pool):
        raise ValueError(f"state_dict field pool is {saved_pool!r}, but this pool is {pool_summary(pool)!r}")
    saved_config = state.get("config")
    if isinstance(saved_config, dict) and legacy:
        saved_config = {**legacy, **saved_config}
    if not isinstance(saved_config, dict) or _without_seed(saved_config) != _without_seed(config):
        raise ValueError(
            f"this state was saved with config {saved_config!r}, but this sampler has {config!r}; "
            f"construct the sampler with the saved settings"
        )


def pool_summary(pool: TaskPool) -> dict[str, Any]:
    return {"fingerprint": pool.fingerprint, "num_tasks": len(pool), "num_keys": len(pool.keys)}


def _without_seed(config: dict[str, Any]) -> dict[str, Any]:
    """The settings a state must share; the seed only picks the first RNG state, which the state carries."""
    return {name: value for name, value in config.items() if name != "seed"}
