"""The training dataset of a TRL run: rows drawn from the sampler's ``sample(n)``, one task each.

TRL takes its prompts from the dataset, so the sampler chooses tasks by choosing rows. The dataset is a lazy
``datasets.IterableDataset`` whose generator draws ``rows_per_batch`` tasks at a time (one generation batch), so each
draw sees every update made before it. A row carries the task's identity (``task_split``, ``task_index``,
``task_family``), a ``draw`` number and its ``prompt``: in text mode the whole chat a consumer shows for the task (the
system prompt and the first observation, reset on the server), in tool mode the system prompt and an empty user
message that TRL fills with the observation ``reset`` returns.

A row stays *pending* from the moment it is drawn until the reward function scores its group. TRL's data loader
reads a batch ahead of generation, so a checkpoint can fall between a draw and its update: the pending rows are saved
with the sampler's state and given again first after a resume, so a resumed run trains on the tasks an uninterrupted
run would have.

On several processes every process draws the same rows from its own copy of the sampler (:mod:`.replicas`): the
draws are compared across processes at every generation batch, and in text mode only the main process resets the
rows' tasks on the server and hands their prompts to the others, so each row is reset once, not once per process.
"""

from __future__ import annotations

from typing import Any, Iterator

from openenv_prime.samplers.task import Task
from openenv_prime.trl.environment import TaskEnvironment
from openenv_prime.trl.replicas import Replicas
from openenv_prime.trl.timers import Timers

ROWS_STATE_VERSION = 1
"""The version of :meth:`SamplerRows.state_dict`'s layout."""


class SamplerRows:
    """Rows drawn from ``sampler``, ``rows_per_batch`` at a time (a whole generation batch, all processes together);
    ``tool_mode``: TRL's environments reset the tasks; ``replicas``: the run's processes."""

    def __init__(self, env: TaskEnvironment, sampler: Any, rows_per_batch: int, *, tool_mode: bool, timers: Timers,
                 replicas: Replicas | None = None):
        if rows_per_batch < 1:
            raise ValueError(f"rows_per_batch must be at least 1, got {rows_per_batch}")
        self.env = env
        self.sampler = sampler
        self.rows_per_batch = rows_per_batch
        self.tool_mode = tool_mode
        self.timers = timers
        self.replicas = replicas or Replicas()
        self.pending: dict[int, dict[str, Any]] = {}  # draw -> row, in draw order
        self.next_draw = 0
        self._by_index = {task.index: task for task in env.tasks}

    def dataset(self):
        """The ``datasets.IterableDataset`` over :meth:`rows` that ``GRPOTrainer`` takes as ``train_dataset``.

        Built on the examples iterable itself: ``IterableDataset.from_generator`` would hash the generator's owner
        (sockets, a sampler) to name a cache that a lazy stream never uses."""
        from datasets import IterableDataset
        from datasets.iterable_dataset import ExamplesIterable

        return IterableDataset(ExamplesIterable(self._keyed_rows, {}))

    def _keyed_rows(self) -> Iterator[tuple[int, dict[str, Any]]]:
        for row in self.rows():
            yield row["draw"], row

    def rows(self) -> Iterator[dict[str, Any]]:
        """The rows drawn before a resume and not yet scored, then new draws, forever."""
        yield from list(self.pending.values())
        while True:
            with self.timers.time("sampler"):  # the copies are identical, so a draw that fails fails on all
                tasks = self.sampler.sample(self.rows_per_batch)
            with self.timers.time("rows"):
                self.replicas.same(f"the tasks of draws {self.next_draw}..{self.next_draw + len(tasks) - 1}",
                                   lambda: [task.index for task in tasks])
            if self.tool_mode:
                prompts = [self.env.tool_prompt() for _ in tasks]
            else:
                with self.timers.time("env_resets"):
                    prompts = self.replicas.from_main(f"resetting the tasks of draws {self.next_draw}.."
                                                      f"{self.next_draw + len(tasks) - 1} on the server",
                                                      lambda: self.env.prompts(tasks))
            with self.timers.time("rows"):
                rows = [self._row(task, prompt) for task, prompt in zip(tasks, prompts)]
            yield from rows

    def task(self, index: int) -> Task:
        """The train task a row's ``task_index`` names."""
        return self._by_index[index]

    def take(self, draw: int) -> dict[str, Any]:
        """The pending row ``draw``, no longer pending: its group was scored. A row scored twice is an error."""
        row = self.pending.pop(draw, None)
        if row is None:
            raise RuntimeError(
                f"draw {draw} was scored twice or never drawn by this dataset; pass the dataset of this OpenEnvTRL "
                "as train_dataset and keep GRPOConfig.shuffle_dataset=False"
            )
        return row

    def _row(self, task: Task, prompt: list[dict[str, str]]) -> dict[str, Any]:
        row = {"prompt": prompt, "task_split": task.split, "task_index": task.index, "task_family": task.key,
               "draw": self.next_draw}
        self.pending[self.next_draw] = row
        self.next_draw += 1
        return row

    # ---- checkpoints --------------------------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        """The sampler's state and the rows drawn but not yet scored (JSON)."""
        return {"version": ROWS_STATE_VERSION, "sampler": self.sampler.state_dict(),
                "pending": list(self.pending.values()), "next_draw": self.next_draw,
                "rows_per_batch": self.rows_per_batch, "processes": self.replicas.count}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore :meth:`state_dict`'s state; the sampler checks its own part, and nothing changes on an error.

        The state does not depend on the number of processes, only on the rows per generation batch: a run resumes
        on any number of processes whose generation batch holds as many rows, and is refused otherwise."""
        if not isinstance(state, dict) or state.get("version") != ROWS_STATE_VERSION:
            raise ValueError(f"not an openenv-prime TRL dataset state of version {ROWS_STATE_VERSION}: "
                             f"{str(state)[:200]}")
        saved = state.get("rows_per_batch", self.rows_per_batch)
        if saved != self.rows_per_batch:
            raise ValueError(
                f"the checkpoint's generation batch held {saved} rows (tasks) and this run's holds "
                f"{self.rows_per_batch} (GRPOConfig.generation_batch_size / num_generations, where generation_batch_size "
                f"= per_device_train_batch_size x processes x steps_per_generation; the checkpoint ran on "
                f"{state.get('processes', 1)} process(es), this run on {self.replicas.count}): resuming would draw "
                f"other tasks than the interrupted run; set per_device_train_batch_size (or steps_per_generation) so "
                f"that the generation batch holds {saved} rows")
        unknown = [row["task_index"] for row in state["pending"] if row["task_index"] not in self._by_index]
        if unknown:
            raise ValueError(f"the checkpoint's pending rows name tasks {unknown[:5]} that the server's "
                             f"{self.env.config.train_split!r} split does not have; resume against the same tasks")
        self.sampler.load_state_dict(state["sampler"])
        self.pending = {int(row["draw"]): dict(row) for row in state["pending"]}
        self.next_draw = int(state["next_draw"])
