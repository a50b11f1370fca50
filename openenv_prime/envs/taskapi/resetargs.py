"""Which keyword arguments an environment's `reset` takes, and the arguments a task's reset is called with.

openenv filters reset arguments against `reset`'s signature and drops the rest without a word, so an
environment whose `reset` lacks a task's key would play some other episode. The wrapper therefore checks
every task's reset keys at start-up, and each request's extra keys per call, against this signature.
No `openenv` import: the caller passes openenv's `Environment` base class.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Any

from openenv_prime.envs.errors import TaskRequestError
from openenv_prime.envs.taskapi.source import TaskProvider

BOOKKEEPING_RESET_ARGS = ("episode_id",)
"""Reset arguments openenv itself sends; dropped when `reset` does not take them, never an error."""


@dataclass(frozen=True)
class ResetSignature:
    owner: str
    names: tuple[str, ...]
    takes_any: bool
    is_async: bool

    @classmethod
    def of(cls, env_cls: type, base_cls: type) -> "ResetSignature":
        """openenv calls `reset_async` when the class overrides it, else `reset`: read that one."""
        is_async = getattr(env_cls, "reset_async", None) is not getattr(base_cls, "reset_async", None)
        method = env_cls.reset_async if is_async else env_cls.reset
        params = list(inspect.signature(method).parameters.values())[1:]  # drop self
        names = tuple(p.name for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY))
        takes_any = any(p.kind == p.VAR_KEYWORD for p in params)
        return cls(f"{env_cls.__qualname__}.{method.__name__}", names, takes_any, is_async)

    def accepts(self, key: str) -> bool:
        return self.takes_any or key in self.names

    def describe(self) -> str:
        return f"{self.owner}({', '.join(self.names)}{', **kwargs' if self.takes_any else ''})"

    def check_source(self, source: TaskProvider) -> None:
        """Refuse, at start-up, a source whose tasks reset with arguments `reset` would silently drop."""
        unknown = sorted(k for k in source.reset_keys() if not self.accepts(k))
        if unknown:
            raise ValueError(
                f"{source.description}: tasks reset with {unknown}, but {self.describe()} does not take "
                f"{'it' if len(unknown) == 1 else 'them'} (openenv would drop {'it' if len(unknown) == 1 else 'them'} "
                f"silently and play another episode); write reset arguments that {self.owner} takes"
            )

    def task_call(
        self, source: TaskProvider, split: str | None, index: Any, extra: dict[str, Any]
    ) -> tuple[dict[str, Any] | None, dict[str, Any]]:
        """(the task's spec or None, the keyword arguments to call `reset` with).

        With `index`, the task's reset arguments (split defaults to "train") plus any extra ones that do
        not contradict them; without, the caller's arguments unchanged. Either way every argument must be
        one `reset` takes (only `episode_id` is dropped when it is not)."""
        extra = {k: v for k, v in extra.items() if not (k in BOOKKEEPING_RESET_ARGS and (v is None or not self.accepts(k)))}
        spec = None
        if index is None:
            kwargs = dict(extra)
            if split is not None:
                kwargs["split"] = split
        else:
            split = "train" if split is None else split
            kwargs = source.reset_kwargs(split, index)
            spec = source.get_task(split, index)
            for key, value in extra.items():
                if key in kwargs and kwargs[key] != value:
                    raise TaskRequestError(
                        key,
                        f"task {spec.get('id')!r} of split {split!r} resets with {key}={kwargs[key]!r}, but the request "
                        f"also passed {key}={value!r}; leave {key} out (split and index already name the task)",
                    )
                kwargs[key] = value
        for key in kwargs:
            if not self.accepts(key):
                hint = " (pass index=... with split)" if key == "split" else ""
                raise TaskRequestError(key, f"unknown reset argument {key!r}{hint}; {self.describe()} takes split, index and its own arguments")
        return spec, kwargs
