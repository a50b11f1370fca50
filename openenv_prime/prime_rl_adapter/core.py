"""The adapter's whole behaviour, without prime-rl: an openenv_prime sampler driven through
prime-rl's `TaskSampler` contract (`__next__`, `observe`, `state_dict`, `load_state_dict`,
`metrics`). `sampler.py` only adds prime-rl's base class, so this runs and tests without it.

The orchestrator calls `__next__` once per group and `observe` once the group is finalized,
possibly much later, out of order, or never (stale drops): nothing here waits for feedback."""

from __future__ import annotations

from collections import Counter, deque
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from openenv_prime.prime_rl_adapter.config import KWARGS_PATH, AdapterConfig, parse_kwargs
from openenv_prime.prime_rl_adapter.families import sampler_tasks
from openenv_prime.prime_rl_adapter.groups import read_group

STATE_VERSION = 1

_COUNTERS = (
    "sampled",
    "observed_groups",
    "updates",
    "errored_groups",
    "empty_groups",
    "errored_rollouts",
    "lost_tokens",
)


def build_inner(config: AdapterConfig, tasks: list[Any]) -> Any:
    """The openenv_prime sampler named in the kwargs, over the family-keyed task references."""
    from openenv_prime.samplers import make_sampler

    try:
        return make_sampler(config.sampler, tasks, **config.sampler_kwargs)
    except (TypeError, ValueError) as exc:
        raise ValueError(
            f"{KWARGS_PATH}.sampler = {config.sampler!r} with sampler_kwargs "
            f"{config.sampler_kwargs!r} cannot be built: {exc}"
        ) from exc


def flat_numbers(metrics: Mapping[str, Any], prefix: str = "") -> dict[str, float]:
    """Nested metrics as `a/b` keys, numbers only: prime-rl casts every value with float()."""
    flat: dict[str, float] = {}
    for name, value in metrics.items():
        key = f"{prefix}{name}"
        if isinstance(value, Mapping):
            flat |= flat_numbers(value, f"{key}/")
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            flat[key] = float(value)
    return flat


class SamplerCore:
    """Serve the taskset's own `vf.Task` objects in the order an openenv_prime sampler picks
    families, and report each finalized group back to it as `update(family, rewards, costs)`."""

    def __init__(self, tasks: Sequence[Any] | Iterator[Any], **kwargs: Any) -> None:
        if not isinstance(tasks, Sequence):
            raise ValueError(
                "openenv_prime samplers need a finite taskset (a list of tasks); this taskset "
                "is an iterator. Use a finite taskset or the standard sampler."
            )
        if not tasks:
            raise ValueError("openenv_prime samplers need at least one task; the taskset is empty")
        self.config = parse_kwargs(kwargs)
        self.tasks = tuple(tasks)
        references = sampler_tasks(self.tasks, self.config.family_field)
        self.family_at = [ref.key for ref in references]
        self.family_by_key = {task.key: family for task, family in zip(self.tasks, self.family_at)}
        self.position_by_key = {task.key: position for position, task in enumerate(self.tasks)}
        self.inner = build_inner(self.config, references)
        self.queue: deque[int] = deque()
        self.pending: Counter[str] = Counter()
        self.counts: dict[str, float] = dict.fromkeys(_COUNTERS, 0)

    def __iter__(self) -> SamplerCore:
        return self

    def __next__(self) -> Any:
        """The next task: the very object the taskset holds (prime-rl checks its key and hash)."""
        if not self.queue:
            self.queue.extend(ref.index for ref in self.inner.sample(self.config.refill))
        position = self.queue.popleft()
        self.pending[self.family_at[position]] += 1
        self.counts["sampled"] += 1
        return self.tasks[position]

    def observe(self, group: list[Any]) -> None:
        """Update the sampler with one group; errored or empty groups are only counted."""
        if not group:
            self.counts["empty_groups"] += 1
            return
        key = group[0].task.key
        family = self.family_by_key.get(key)
        if family is None:
            raise ValueError(
                f"observed a group of task {key!r}, which is not in this sampler's taskset "
                f"({len(self.tasks)} tasks); each training source needs its own sampler"
            )
        if self.pending[family] > 0:
            self.pending[family] -= 1
        report = read_group(group, success_threshold=self.config.success_threshold, cost=self.config.cost)
        self.counts["observed_groups"] += 1
        self.counts["errored_rollouts"] += report.errored_rollouts
        if not report.rewards:
            self.counts["errored_groups" if report.errored_rollouts else "empty_groups"] += 1
            self.counts["lost_tokens"] += report.lost_cost
            return
        self.inner.update(family, report.rewards, report.costs)
        self.counts["updates"] += 1

    def state_dict(self) -> dict[str, Any]:
        """Plain data (pickle- and JSON-safe): the inner sampler, undelivered draws, counters."""
        return {
            "version": STATE_VERSION,
            "family_field": self.config.family_field,
            "num_tasks": len(self.tasks),
            "inner": self.inner.state_dict(),
            "queue": [self.tasks[position].key for position in self.queue],
            "counts": dict(self.counts),
        }

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore a checkpoint. Groups in flight at save time never report back after a
        resume, so the pending counts start from zero."""
        if state_dict.get("version") != STATE_VERSION:
            raise ValueError(
                f"openenv_prime sampler checkpoint has version {state_dict.get('version')!r}; "
                f"this adapter reads version {STATE_VERSION}"
            )
        if state_dict["family_field"] != self.config.family_field:
            raise ValueError(
                f"checkpoint was taken with family_field={state_dict['family_field']!r}, the config "
                f"now says {self.config.family_field!r}; families would not match"
            )
        queue = [self.position_by_key[key] for key in state_dict["queue"] if key in self.position_by_key]
        counts = {name: state_dict["counts"].get(name, 0) for name in _COUNTERS}
        self.inner.load_state_dict(state_dict["inner"])
        self.queue = deque(queue)
        self.counts = counts
        self.pending = Counter()

    def metrics(self) -> dict[str, float]:
        """The inner sampler's metrics plus the adapter's counters, all flat floats."""
        adapter = {f"adapter/{name}": float(value) for name, value in self.counts.items()}
        adapter["adapter/pending_groups"] = float(sum(self.pending.values()))
        return flat_numbers(self.inner.metrics()) | adapter
