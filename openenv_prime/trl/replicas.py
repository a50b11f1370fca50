"""The training processes of a TRL run, as the sampler's copies see them: one copy per process, kept identical.

TRL on N processes (``torchrun``/``accelerate launch``: DDP, FSDP, ZeRO) iterates the dataset on every process and
keeps each process's contiguous slice of a generation batch, so a reward function sees only its own completions and a
group can be split between two processes. The sampler's state is therefore replicated, not served: every process
holds the same sampler and draws the same rows, the reward function gathers each slice's (draw, reward, cost) from
all processes and every process applies every group's update in draw order, once. The copies stay identical because
they start identical and see the same calls; :meth:`Replicas.same` checks that they do.

Two rules hold for every collective here, by construction:

- **It runs on the trainer's thread.** NCCL's object collectives put their tensors on ``torch.cuda.current_device()``,
  which belongs to the calling thread, and accelerate sets it on the trainer's thread only; a collective on another
  thread of rank k > 0 would use GPU 0. :meth:`Replicas.exchange` refuses to run elsewhere (a thread that must, binds
  the process's device first with :func:`bind_device`).
- **It carries a status.** The work that feeds a collective runs inside :meth:`Replicas.exchange`, which gathers
  ``("ok", value)`` or ``("error", message)`` from every process, so a process whose work failed still joins the
  collective, and every process raises the same :class:`ProcessFailed` naming it and quoting its error: no process
  is left waiting for one that died (NCCL would wait for its 30-minute timeout, and print a transport error).

The collectives are accelerate's (``gather_object``) on the process group TRL's accelerator already runs.
"""

from __future__ import annotations

import hashlib
import json
import threading
from typing import Any, Callable, TypeVar

T = TypeVar("T")

_bound = threading.local()


class ReplicaMismatch(RuntimeError):
    """The processes' copies of the sampler (or their draws) differ; every process raises it at the same point."""


class ProcessFailed(RuntimeError):
    """The work of one or more processes failed before a collective; every process raises it there, with their
    messages, so all stop together."""


def digest(value: Any) -> str:
    """A short hash of a JSON-serializable value (key order ignored)."""
    return hashlib.sha256(json.dumps(value, sort_keys=True, default=str).encode()).hexdigest()[:16]


def bind_device(device: Any) -> None:
    """Make ``device`` (the process's accelerator device, e.g. ``trainer.accelerator.device``) current on the calling
    thread, before any CUDA call or collective there; a thread the package starts calls this first."""
    import torch

    if getattr(device, "type", None) == "cuda":
        torch.cuda.set_device(device)
    _bound.device = device


class Replicas:
    """Process ``index`` of ``count``; with one process every call is local and nothing is exchanged. ``thread``:
    the trainer's thread, the one every collective runs on (default: the thread that builds this)."""

    def __init__(self, index: int = 0, count: int = 1, *, thread: threading.Thread | None = None):
        if count < 1 or not 0 <= index < count:
            raise ValueError(f"process {index} of {count} is no process")
        self.index = index
        self.count = count
        self.thread = thread or threading.current_thread()

    @classmethod
    def of(cls, args: Any) -> "Replicas":
        """The processes of a run configured by TRL's ``GRPOConfig`` (``world_size``, ``process_index``)."""
        return cls(args.process_index, args.world_size)

    @property
    def main(self) -> bool:
        return self.index == 0

    def exchange(self, what: str, make: Callable[[], T]) -> list[T]:
        """``make()`` on every process, and every process's result in process order, on every process. If ``make``
        raises on any process, every process raises :class:`ProcessFailed` here, naming ``what``, the processes and
        their errors (on the failing process chained to its own exception)."""
        failure: Exception | None = None
        try:
            mine: tuple[str, Any] = ("ok", make())
        except Exception as err:  # told to every process below
            failure, mine = err, ("error", f"{type(err).__name__}: {err}")
        parts = self.gather([mine])
        failed = [(i, text) for i, (status, text) in enumerate(parts) if status == "error"]
        if failed:
            if self.count == 1 and failure is not None:
                raise failure
            told = "; ".join(f"process {i}: {text}" for i, text in failed)
            raise ProcessFailed(f"{what} failed on process{'es' if len(failed) > 1 else ''} "
                                f"{', '.join(str(i) for i, _ in failed)} of {self.count}, so every process stops "
                                f"here. {told}") from failure
        return [value for _, value in parts]

    def from_main(self, what: str, make: Callable[[], T]) -> T:
        """``make()`` run on the main process only, its result given to every process; an error in it is raised on
        every process (see :meth:`exchange`)."""
        return self.exchange(what, lambda: make() if self.main else None)[0]

    def same(self, what: str, make: Callable[[], T]) -> T:
        """``make()`` on every process; raise :class:`ReplicaMismatch` on every process unless its value hashes
        alike on all of them. Returns this process's value."""
        box: list[T] = []

        def mine() -> str:
            box.append(make())
            return digest(box[0])

        hashes = self.exchange(what, mine)
        if len(set(hashes)) > 1:
            differing = [i for i, h in enumerate(hashes) if h != hashes[0]]
            raise ReplicaMismatch(
                f"{what} differ between the training processes (process 0 has {hashes[0]}, processes {differing} "
                f"another): the copies of the sampler must see the same calls. Run the same script with the same "
                f"OpenEnvTRLConfig (seed, sampler, sampler_kwargs) on every process, against the same server and tasks, "
                f"and give the trainer this OpenEnvTRL's dataset and reward function; stopping the run before the "
                f"copies train on different tasks")
        return box[0]

    def gather(self, items: list) -> list:
        """Every process's ``items``, concatenated in process order, on every process: the bare collective, for a
        caller that puts the status in the items itself (the eval's shares); others use :meth:`exchange`."""
        if self.count == 1:
            return list(items)
        here = threading.current_thread()
        if here is not self.thread and getattr(_bound, "device", None) is None:
            raise RuntimeError(
                f"a collective was called on thread {here.name!r}, not the trainer's ({self.thread.name!r}): on GPUs "
                "it would use another device than the process's; call it on the trainer's thread, or call "
                "openenv_prime.trl.replicas.bind_device(accelerator.device) on this thread first")
        from accelerate.utils import gather_object

        return gather_object(list(items))
