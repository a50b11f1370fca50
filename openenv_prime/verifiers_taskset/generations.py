"""The two verifiers generations users run, and every difference between them that this package meets.

- **0.4** (the registry's verifiers 0.4.0): `TaskData` has a durable `id`, and iterating a taskset sets
  each task's `idx`; the v1 eval CLI is `vf-eval`, and `-n`/`-s` are `--select.limit`/`--select.shuffle`
  (seed `--select.seed`).
- **pinned** (the commit prime-rl pins in its `deps/verifiers` submodule, a60a606 at prime-rl 559b447;
  it installs as 0.3.1.dev62): `TaskData` has `idx` and `name` but no `id`, and a taskset's `load()`
  sets `idx` itself; the v1 eval CLI is `eval` (`vf-eval` is still the legacy CLI, which cannot load a
  v1 taskset), `-n`/`-s` take and shuffle tasks (seed fixed at 0), and rollouts run on an env-server
  worker pool unless `--no-serve`.

The generation is read from what the installed verifiers has, not from its version number (a
checkout's version depends on how it was built)."""

from __future__ import annotations

from typing import Literal, TypeVar

import verifiers.v1 as vf

Generation = Literal["0.4", "pinned"]
TaskT = TypeVar("TaskT", bound=vf.Task)

GENERATION: Generation = "0.4" if "id" in vf.TaskData.model_fields else "pinned"
"""Which verifiers generation is installed."""

if GENERATION == "0.4":
    TaskDataBase = vf.TaskData
else:

    class TaskDataBase(vf.TaskData):
        """The pinned generation's TaskData with verifiers 0.4's `id` field, so a task's durable id
        has one name in both generations."""

        id: str | None = None
        """Durable id from the task's source (verifiers 0.4's field)."""


def numbered(tasks: list[TaskT]) -> list[TaskT]:
    """`tasks` as `load()` returns them: the pinned generation's tasksets number their tasks (`idx`)
    themselves, 0.4's `__iter__` does it (so 0.4 tasks are left as they are, like its own tasksets')."""
    if GENERATION == "pinned":
        for position, task in enumerate(tasks):
            task.data = task.data.model_copy(update={"idx": position})
    return tasks


def eval_command(
    taskset: str = "openenv-prime",
    *,
    model: str,
    model_base_url: str,
    output_dir: str,
    run_name: str,
    num_tasks: int | None = None,
    rollouts: int | None = None,
    concurrency: int | None = None,
    shuffle: bool = False,
    in_process: bool = True,
    generation: Generation = GENERATION,
) -> list[str]:
    """The v1 eval command line (program name first) of `generation`, offline: no push to the
    platform, a local OpenAI-compatible model. Taskset fields follow as `--env.taskset.<field> VALUE`
    in both generations. `in_process=False` keeps the pinned generation's default, rollouts on an
    env-server worker pool (prime-rl's path; 0.4's `vf-eval` always runs them in-process)."""
    command = ["vf-eval" if generation == "0.4" else "eval", taskset, "-m", model,
               "--client.base-url", model_base_url, "--no-push", "-o", output_dir, "--run.name", run_name]
    if generation == "pinned" and in_process:
        command.append("--no-serve")
    for flag, value in (("-n", num_tasks), ("-r", rollouts), ("-c", concurrency)):
        if value is not None:
            command += [flag, str(value)]
    if shuffle:
        command.append("-s")  # seed 0: fixed in the pinned generation, `--select.seed` in 0.4
    return command
