"""The training processes of a TRL run, as the sampler's copies see them: one copy per process, kept identical.

TRL on N processes (``torchrun``/``accelerate launch``: DDP, FSDP, ZeRO) iterates the dataset on every process and
keeps each process's contiguous slice of a generation batch, so a reward function sees only its own completions and a
group can be split between two processes. The sampler's state is therefore replicated, not served: every process
holds the same sampler and draws the same rows, the reward function gathers each slice's (draw, reward, cost) from
all processes and every process applies every group's update in draw order, once. The copies stay identical because
they start identical and see the same calls; :meth:`Replicas.same` checks that they do. The collectives are
accelerate's (``gather_object``, ``broadcast_object_list``) on the process group TRL's accelerator already runs.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, Callable, TypeVar

T = TypeVar("T")


class ReplicaMismatch(RuntimeError):
    """The processes' copies of the sampler (or their draws) differ; every process raises it at the same point."""


def digest(value: Any) -> str:
    """A short hash of a JSON-serializable value (key order ignored)."""
    return hashlib.sha256(json.dumps(value, sort_keys=True, default=str).encode()).hexdigest()[:16]


class Replicas:
    """Process ``index`` of ``count``; with one process every call is local and nothing is exchanged."""

    def __init__(self, index: int = 0, count: int = 1):
        if count < 1 or not 0 <= index < count:
            raise ValueError(f"process {index} of {count} is no process")
        self.index = index
        self.count = count

    @classmethod
    def of(cls, args: Any) -> "Replicas":
        """The processes of a run configured by TRL's ``GRPOConfig`` (``world_size``, ``process_index``)."""
        return cls(args.process_index, args.world_size)

    @property
    def main(self) -> bool:
        return self.index == 0

    def gather(self, items: list) -> list:
        """Every process's ``items``, concatenated in process order, on every process."""
        if self.count == 1:
            return list(items)
        from accelerate.utils import gather_object

        return gather_object(list(items))

    def from_main(self, make: Callable[[], T]) -> T:
        """``make()`` run on the main process only, its result given to every process. An error in it is raised on
        every process, so none waits for a result that never comes."""
        if self.count == 1:
            return make()
        from accelerate.utils import broadcast_object_list

        box: list[Any] = [None]
        if self.main:
            try:
                box[0] = ("ok", make())
            except Exception as err:  # raised below on every process
                box[0] = ("error", f"{type(err).__name__}: {err}")
        broadcast_object_list(box, from_process=0)
        status, value = box[0]
        if status == "error":
            raise RuntimeError(f"on the main process: {value}")
        return value

    def same(self, what: str, value: Any) -> None:
        """Raise :class:`ReplicaMismatch` on every process unless ``value`` hashes alike on all of them."""
        if self.count == 1:
            return
        hashes = self.gather([digest(value)])
        if len(set(hashes)) > 1:
            differing = [i for i, h in enumerate(hashes) if h != hashes[0]]
            raise ReplicaMismatch(
                f"{what} differ between the training processes (process 0 has {hashes[0]}, processes {differing} "
                f"another): the copies of the sampler must see the same calls. Run the same script with the same "
                f"OpenEnvTRLConfig (seed, sampler, sampler_kwargs) on every process, against the same server and tasks, "
                f"and give the trainer this OpenEnvTRL's dataset and reward function; stopping the run before the "
                f"copies train on different tasks")
