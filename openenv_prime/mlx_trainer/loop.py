"""The GRPO training loop: sample tasks, play G episodes each, report every group to the sampler,
train on the groups with signal, log, evaluate, checkpoint.

Order inside a step matters: ``sampler.update`` sees every scored group *before* groups without
signal are dropped from the loss, so a curriculum learns which families are too easy or too hard.
A step either completes (its update, counters and log line written by one job on the main thread) or leaves
no trace (the sampler rewound), so the checkpoint written after an environment failure or a Ctrl-C is exactly
the last completed step.

While a step trains, the next step's tasks are already drawn and their first wave reset (``environment.prefetch``):
the draw comes right after this step's updates, exactly where it would come otherwise, and the sampler state
from before that draw is what a checkpoint saves, so a resumed run draws the same tasks.
"""

from __future__ import annotations

import asyncio
import sys
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

from openenv_prime.client.errors import OpenEnvError
from openenv_prime.mlx_trainer.checkpoint import TrainerState, load_checkpoint, save_checkpoint, seed_step
from openenv_prime.mlx_trainer.config import TrainConfig, sampler_kwargs
from openenv_prime.mlx_trainer.errors import TrainingError, TrainingInterrupted
from openenv_prime.mlx_trainer.metrics import rollout_summary, sampler_log_metrics
from openenv_prime.mlx_trainer.rundir import RunStart, append_log, claim, plan_run, truncate_log
from openenv_prime.mlx_trainer.worker import MainThreadMLX

__all__ = ["RunResult", "TrainingError", "TrainingInterrupted", "train"]


@dataclass
class _Prefetch:
    """The next step's tasks, drawn early, their first wave being reset, and the sampler state before the draw."""

    tasks: list
    sampler_state: dict[str, Any]
    wave: asyncio.Task


@dataclass
class RunResult:
    run_dir: Path
    state: TrainerState
    already_finished: bool = False


def train(config: TrainConfig, run_dir: Path | None = None, *, resume: bool = False, allow_config_change: bool = False,
          sampler_wrapper=None, progress: bool = True) -> RunResult:
    """Run (or with ``resume`` continue) the training described by ``config``; blocks until done.

    Everything that can be checked (config, run directory, config changes on resume) is checked before the
    model loads. ``sampler_wrapper(sampler) -> sampler`` lets callers observe or wrap the sampler (tests
    record updates). Ctrl-C raises :class:`TrainingInterrupted` after a checkpoint of the last completed step.
    """
    run_dir = Path(run_dir if run_dir is not None else config.out)
    start = plan_run(run_dir, config, resume=resume, allow_config_change=allow_config_change)
    for note in start.notes:
        print(f"note: {note}", file=sys.stderr)
    with _environment(config) as base_url:
        trainer = _Trainer(config, run_dir, base_url, start, sampler_wrapper, progress)
        return trainer.mlx.drive(trainer.run())


@contextmanager
def _environment(config: TrainConfig) -> Iterator[str]:
    env = config.environment
    if env.base_url:
        yield env.base_url
        return
    from openenv_prime.envs.launch import local_server

    served = {"datasets": env.datasets} if env.embedded == "reasoning-gym" else {"schedule": env.schedule}
    sizes = [arg for split, n in env.split_sizes.items() for arg in (f"--{split}-size", str(n))]
    with local_server(env.embedded, tiers=env.tiers, max_sessions=env.max_sessions, extra_args=sizes, **served) as url:
        yield url


class _Trainer:
    def __init__(self, config: TrainConfig, run_dir: Path, base_url: str, start: RunStart, sampler_wrapper, progress: bool):
        self.cfg = config
        self.run_dir = run_dir
        self.base_url = base_url
        self.start = start
        self.sampler_wrapper = sampler_wrapper
        self.show_progress = progress
        self.state = TrainerState()
        self.mlx = MainThreadMLX()
        self._prefetch: _Prefetch | None = None

    # ---- setup ------------------------------------------------------------------------------------
    def _load_model(self) -> None:
        from openenv_prime.mlx_trainer.trainable import load_trainable

        self.model, self.tokenizer, self.optimizer = load_trainable(self.cfg)

    async def _setup(self) -> None:
        from openenv_prime.client.setup import EnvironmentSetup
        from openenv_prime.mlx_trainer.rollouts import EpisodeRunner, Renderer
        from openenv_prime.samplers import make_sampler

        cfg, env = self.cfg, self.cfg.environment
        await self.mlx.run(self._load_model)
        with EnvironmentSetup(self.base_url, tasks=env.tasks, env_name=env.env_name, timeout=env.timeout) as setup:
            split = setup.choose_split(env.train_split, setting="environment.train_split").name
            family = setup.family_field(split, env.family_field)
            if (note := family.note("environment.family_field")) is not None:
                print(f"note: {note}", file=sys.stderr)
            tasks = setup.sampler_tasks(split, family_field=family.name, family_setting="environment.family_field")
            resets = {task.index: setup.reset_kwargs(task.split, task.index) for task in tasks}
            self.env_name = setup.env_name
            if env.check_reset:
                note = await setup.check_reset(env.train_split, len(tasks), timeout=env.timeout)
                if note is not None:
                    print(f"note: {note}", file=sys.stderr)
            protocol = setup.protocol(env, action_setting="environment.action_field")
        if not tasks:
            where = env.tasks or self.base_url
            raise TrainingError(f"environment.train_split {env.train_split!r} has no tasks in {where}")
        try:
            sampler = make_sampler(cfg.sampler.name, tasks, **sampler_kwargs(cfg))
        except (TypeError, ValueError) as err:
            raise TrainingError(f"sampler.kwargs: {err}; see the {cfg.sampler.name} sampler's arguments") from None
        self.sampler = self.sampler_wrapper(sampler) if self.sampler_wrapper else sampler
        self.renderer = Renderer(self.tokenizer, cfg.grpo.system_prompt, protocol=protocol)
        self.runner = EpisodeRunner(
            self.model, self.renderer, self.mlx, self.base_url,
            max_sessions=min(env.max_sessions, cfg.grpo.group_size * cfg.grpo.tasks_per_step),
            max_new_tokens=cfg.grpo.max_new_tokens, temperature=cfg.grpo.temperature,
            rules=env.rules(), timeout=env.timeout, reset_kwargs=lambda task: resets[task.index],
        )

    async def _restore(self) -> bool:
        """Load the latest checkpoint; True when the run had already finished."""
        self.state = await self.mlx.run(load_checkpoint, self.start.resume_from, self.model, self.optimizer)
        self.sampler.load_state_dict(self.state.sampler)
        truncate_log(self.run_dir, self.state.step)
        return self.state.step >= self.cfg.steps

    # ---- run --------------------------------------------------------------------------------------
    async def run(self) -> RunResult:
        try:
            await self._setup()
            if self.start.resume_from is not None and await self._restore():
                return RunResult(self.run_dir, self.state, already_finished=True)
        except asyncio.CancelledError:
            raise TrainingInterrupted(
                f"interrupted ({self.mlx.interrupted}) before training started; nothing new was written to {self.run_dir}"
            ) from None
        claim(self.run_dir, self.cfg, self.start)
        if self.start.config_changes:
            append_log(self.run_dir, {"type": "config_change", "step": self.state.step, "changes": self.start.config_changes})
        interrupted = False
        try:
            with _progress(self.show_progress, self.cfg.steps, self.state.step) as bar:
                await self._guarded(self._eval_if_due)
                while self.state.step < self.cfg.steps:
                    record = await self._guarded(self._step_or_nothing)
                    bar(record)
                    await self._guarded(self._eval_if_due)
                    if self.state.step % self.cfg.checkpoint.every == 0 and self.state.step < self.cfg.steps:
                        await self._checkpoint()
        except asyncio.CancelledError:
            interrupted = True
        finally:
            await self._drop_prefetch()
            await self.runner.close()
        if interrupted:
            path = await self._checkpoint()
            raise TrainingInterrupted(
                f"interrupted ({self.mlx.interrupted}) during step {self.state.step + 1}; saved a checkpoint of the last "
                f"completed step, {self.state.step}, in {path}. Continue with `openenv-prime train --resume --out {self.run_dir}`"
            )
        self.state.finished = True
        await self._checkpoint()
        if self.cfg.plot:
            self._plot()
        return RunResult(self.run_dir, self.state)

    async def _guarded(self, fn):
        try:
            return await fn()
        except OpenEnvError as err:
            await self._fail(err)

    async def _fail(self, err: OpenEnvError):
        # The runner already dropped its sockets when the error came out of it.
        path = await self._checkpoint()
        raise TrainingError(
            f"the environment at {self.base_url} failed during step {self.state.step + 1}: {err}\n"
            f"A checkpoint of step {self.state.step} is in {path}; once the server is back, continue with "
            f"`openenv-prime train --resume --out {self.run_dir}`"
        ) from err

    async def _checkpoint(self) -> Path:
        self.state.sampler = self._sampler_state()
        return await self.mlx.run(save_checkpoint, self.run_dir, self.model, self.optimizer, self.state, self.cfg.checkpoint.keep)

    def _sampler_state(self) -> dict[str, Any]:
        """The sampler's state as of the last completed step (before an early draw for the next one)."""
        return self._prefetch.sampler_state if self._prefetch else self.sampler.state_dict()

    async def _step_or_nothing(self) -> dict[str, Any]:
        """One training step that either completes or leaves no trace (the sampler rewound), so a checkpoint
        taken after an error or an interrupt is exactly the last completed step."""
        before = self._sampler_state()
        step = self.state.step + 1
        try:
            return await self._train_step()
        except BaseException:
            await self.mlx.barrier()  # a commit already running on the main thread finishes first
            if self.state.step < step:
                await self._drop_prefetch()
                self.sampler.load_state_dict(before)  # the step is lost: its draws must repeat on resume
            raise

    def _prefetch_next(self, step: int) -> None:
        """Draw step ``step + 1``'s tasks now and reset its first wave in the background while ``step`` trains."""
        if not self.cfg.environment.prefetch or step >= self.cfg.steps or self._eval_due(step):
            return  # an eval after this step closes the sockets; the last step has no next
        cfg = self.cfg.grpo
        state = self.sampler.state_dict()
        tasks = self.sampler.sample(cfg.tasks_per_step)
        wave = asyncio.create_task(self.runner.open_first_wave(tasks, cfg.group_size, step + 1))
        self._prefetch = _Prefetch(tasks, state, wave)

    async def _take_prefetch(self) -> tuple[list | None, Any]:
        """This step's tasks and reset first wave, if drawn early; (None, None) otherwise."""
        prefetch, self._prefetch = self._prefetch, None
        if prefetch is None:
            return None, None
        t0 = time.perf_counter()
        wave = await prefetch.wave
        self.runner.times.environment += time.perf_counter() - t0  # what the overlap did not hide
        return prefetch.tasks, wave

    async def _drop_prefetch(self) -> None:
        """Give back an early draw that will not be played: rewind the sampler, stop the resets, close their sockets."""
        prefetch, self._prefetch = self._prefetch, None
        if prefetch is None:
            return
        self.sampler.load_state_dict(prefetch.sampler_state)
        prefetch.wave.cancel()
        await asyncio.gather(prefetch.wave, return_exceptions=True)
        await self.runner.close()

    async def _train_step(self) -> dict[str, Any]:
        from openenv_prime.mlx_trainer.grpo import group_advantages
        from openenv_prime.mlx_trainer.rollouts import RolloutTimes

        cfg = self.cfg.grpo
        step = self.state.step + 1
        await self.mlx.run(seed_step, self.cfg.seed, step)
        started = time.perf_counter()
        self.runner.times = RolloutTimes()
        tasks, first_wave = await self._take_prefetch()
        if tasks is None:
            tasks = self.sampler.sample(cfg.tasks_per_step)
        groups = await self.runner.run_groups(tasks, cfg.group_size, step, first_wave)

        batch: dict[str, list] = {"sequences": [], "masks": [], "advantages": []}
        with_signal = unscored_groups = 0
        for task, group in zip(tasks, groups):
            scored = [r for r in group if r.reward is not None]  # a missing reward is left out, never 0.0
            if not scored:
                unscored_groups += 1
                continue
            rewards = [r.reward for r in scored]
            self.sampler.update(task, rewards, costs=[r.generated_tokens for r in scored])
            adv = (group_advantages(rewards, cfg.signal_tolerance, scale=cfg.loss != "dr_grpo")
                   if len(scored) >= 2 else None)
            if adv is None:
                continue  # no signal: reported to the sampler above, left out of the loss
            with_signal += 1
            batch["sequences"] += [(r.prompt, r.completion) for r in scored]
            batch["masks"] += [r.completion_mask for r in scored]
            batch["advantages"] += adv

        rollouts = [r for g in groups for r in g]
        record = {
            "type": "step",
            "step": step,
            **rollout_summary(rollouts),
            "groups": len(groups),
            "groups_with_signal": with_signal,
            "groups_unscored": unscored_groups,
            "sampler": sampler_log_metrics(self.sampler, self.cfg.sampler.log_keys),
            "prefetch_seconds": first_wave.seconds if first_wave else 0.0,
        }
        self._prefetch_next(step)
        return await self.mlx.run(self._commit, step, batch, rollouts, record, started)

    def _commit(self, step: int, batch: dict[str, list], rollouts: list, record: dict[str, Any], started: float) -> dict[str, Any]:
        """On the main thread, all or nothing: the optimizer update, the counters and the step's log line."""
        from openenv_prime.mlx_trainer.grpo import make_batch, train_on_batch

        t_train = time.perf_counter()
        metrics = {"loss": 0.0, "kl": 0.0}
        if batch["sequences"]:
            pad = self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None else 0
            packed = make_batch(batch["sequences"], batch["advantages"], pad, completion_masks=batch["masks"])
            metrics = train_on_batch(self.model, self.optimizer, packed, self.cfg.grpo)
        training = time.perf_counter() - t_train
        new_tokens = sum(r.generated_tokens for r in rollouts)
        self.state.step = step
        self.state.episodes += len(rollouts)
        self.state.tokens += new_tokens
        total = time.perf_counter() - started
        gen, env = self.runner.times.generation, self.runner.times.environment
        record.update({
            "episodes": self.state.episodes,
            "tokens": self.state.tokens,
            "tokens_per_s": new_tokens / gen if gen > 0 else 0.0,
            "seconds": {"generation": gen, "environment": env, "training": training,
                        "other": max(0.0, total - gen - env - training)},
            "loss": metrics["loss"],
            "kl": metrics["kl"],
        })
        append_log(self.run_dir, record)
        return record

    def _eval_due(self, step: int) -> bool:
        ev = self.cfg.eval
        if not ev.enabled:
            return False
        return step == 0 or step == self.cfg.steps or (ev.every > 0 and step % ev.every == 0)

    async def _eval_if_due(self) -> None:
        step = self.state.step
        if not self._eval_due(step) or any(e["step"] == step for e in self.state.evals):
            return
        from openenv_prime.evaluation import EvalConfig, run_eval_async
        from openenv_prime.mlx_trainer.policy import TrainerPolicy

        await self.runner.close()  # free the server's session slots for the eval's own sessions
        env, ev = self.cfg.environment, self.cfg.eval
        config = EvalConfig(
            base_url=self.base_url, env_name=self.env_name, tasks=env.tasks, split=env.test_split, per_family=ev.tasks_per_family,
            seed=self.cfg.seed, family_field=env.family_field, system_prompt=self.cfg.grpo.system_prompt or None,
            **env.prompt_fields(),
            max_concurrency=min(32, env.max_sessions), timeout=env.timeout, check_reset=env.check_reset,
            max_steps=env.max_steps, max_invalid_actions=env.max_invalid_actions, reward_mode=env.reward_mode,
            reward_clip=env.reward_clip, invalid_flags=list(env.invalid_flags), invalid_flags_in_state=env.invalid_flags_in_state,
        )
        policy = TrainerPolicy(self.model, self.tokenizer, ev.max_new_tokens or self.cfg.grpo.max_new_tokens, self.mlx)
        result = await run_eval_async(config, policy)
        if not self.state.evals:  # how the test split and its families were chosen, once
            for choice in result.choices:
                print(f"eval: {choice}", file=sys.stderr)
        record = {
            "type": "eval",
            "step": step,
            "episodes": self.state.episodes,
            "tokens": self.state.tokens,
            "accuracy": {f.family: f.accuracy for f in result.families},
            "overall": result.accuracy,
            "n": {f.family: f.tasks for f in result.families},
        }
        self.state.evals.append(record)
        append_log(self.run_dir, record)

    def _plot(self) -> None:
        from openenv_prime.mlx_trainer.plot import plot_runs, plot_sampler_panel

        if self.state.evals:
            plot_runs([self.run_dir], self.run_dir / "plots" / "accuracy.png")
        plot_sampler_panel(self.run_dir, self.run_dir / "plots" / "curriculum.png")


@contextmanager
def _progress(enabled: bool, total: int, done: int):
    """A rich progress bar; yields ``update(step_record)``."""
    if not enabled:
        yield lambda record: None
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    with Progress(TextColumn("train"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  TextColumn("{task.description}")) as progress:
        task = progress.add_task("", total=total, completed=done)

        def update(record: dict[str, Any]) -> None:
            progress.update(task, completed=record["step"],
                            description=f"reward {record['reward']:.2f}  loss {record['loss']:+.3f}  "
                                        f"{record['tokens_per_s']:.0f} tok/s")

        yield update
