"""The GRPO training loop: sample tasks, play G episodes each, report every group to the sampler,
train on the groups with signal, log, evaluate, checkpoint.

Order inside a step matters: ``sampler.update`` sees every scored group *before* groups without
signal are dropped from the loss, so a curriculum learns which families are too easy or too hard.
"""

from __future__ import annotations

import json
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

from openenv_prime.client.errors import OpenEnvError
from openenv_prime.mlx_trainer.config import TrainConfig, dump_toml
from openenv_prime.mlx_trainer.worker import MainThreadMLX
from openenv_prime.mlx_trainer.checkpoint import (
    TrainerState,
    latest_checkpoint,
    load_checkpoint,
    save_checkpoint,
    seed_step,
)


class TrainingError(RuntimeError):
    """The run cannot go on (environment gone, run directory in the way); the message says what to do."""


@dataclass
class RunResult:
    run_dir: Path
    state: TrainerState
    already_finished: bool = False


def train(config: TrainConfig, run_dir: Path | None = None, *, resume: bool = False, sampler_wrapper=None,
          progress: bool = True) -> RunResult:
    """Run (or with ``resume`` continue) the training described by ``config``; blocks until done.

    ``sampler_wrapper(sampler) -> sampler`` lets callers observe or wrap the sampler (tests record updates).
    """
    run_dir = Path(run_dir if run_dir is not None else config.out)
    _check_run_dir(run_dir, resume)
    with _environment(config) as base_url:
        trainer = _Trainer(config, run_dir, base_url, sampler_wrapper, progress)
        return trainer.mlx.drive(trainer.run(resume))


def _check_run_dir(run_dir: Path, resume: bool) -> None:
    has_run = (run_dir / "log.jsonl").exists() or latest_checkpoint(run_dir) is not None
    if has_run and not resume:
        raise TrainingError(f"{run_dir} already holds a run; pass --resume to continue it, or --out NEW_DIR to start another")
    if resume and latest_checkpoint(run_dir) is None:
        raise TrainingError(f"--resume: {run_dir} has no checkpoint to resume from; start the run without --resume")


@contextmanager
def _environment(config: TrainConfig) -> Iterator[str]:
    env = config.environment
    if env.base_url:
        yield env.base_url
        return
    from openenv_prime.envs.launch import local_server

    with local_server(env.embedded, tiers=env.tiers, max_sessions=env.max_sessions, schedule=env.schedule) as url:
        yield url


class _Trainer:
    def __init__(self, config: TrainConfig, run_dir: Path, base_url: str, sampler_wrapper, progress: bool):
        self.cfg = config
        self.run_dir = run_dir
        self.base_url = base_url
        self.sampler_wrapper = sampler_wrapper
        self.show_progress = progress
        self.state = TrainerState()
        self.mlx = MainThreadMLX()

    # ---- setup ------------------------------------------------------------------------------------
    def _load_model(self) -> None:
        from openenv_prime.mlx_trainer.grpo import make_optimizer
        from openenv_prime.mlx_trainer.lora import apply_lora
        from openenv_prime.mlx_trainer.models import load_base

        seed_step(self.cfg.seed, 0)
        m = self.cfg.model
        self.model, self.tokenizer = load_base(m.path, m.quantize_bits, m.quantize_group_size)
        apply_lora(self.model, self.cfg.lora)
        self.optimizer = make_optimizer(self.cfg.grpo, self.cfg.steps)
        self.optimizer.init(self.model.trainable_parameters())

    async def _setup(self) -> None:
        from openenv_prime.client import TaskAPIClient
        from openenv_prime.client.tasks import load_sampler_tasks
        from openenv_prime.mlx_trainer.rollouts import EpisodeRunner, Renderer
        from openenv_prime.samplers import make_sampler

        cfg, env = self.cfg, self.cfg.environment
        await self.mlx.run(self._load_model)
        with TaskAPIClient(self.base_url, env_name=env.env_name, timeout=env.timeout) as api:
            tasks = load_sampler_tasks(api, env.train_split, family_field=env.family_field)
            action_schema = api.action_schema()
            self.env_name = api.env_name
        if not tasks:
            raise TrainingError(f"environment.train_split {env.train_split!r} has no tasks at {self.base_url}")
        kwargs = dict(cfg.sampler.kwargs)
        if cfg.sampler.name != "sequential":
            kwargs.setdefault("seed", cfg.seed)
        if cfg.sampler.name == "curriculum":
            kwargs.setdefault("group_size", cfg.grpo.group_size)
        try:
            sampler = make_sampler(cfg.sampler.name, tasks, **kwargs)
        except (TypeError, ValueError) as err:
            raise TrainingError(f"sampler.kwargs: {err}; see the {cfg.sampler.name} sampler's arguments") from None
        self.sampler = self.sampler_wrapper(sampler) if self.sampler_wrapper else sampler
        self.renderer = Renderer(self.tokenizer, cfg.grpo.system_prompt, env.observation_field, env.action_field, action_schema)
        self.runner = EpisodeRunner(
            self.model, self.renderer, self.mlx, self.base_url,
            max_sessions=min(env.max_sessions, cfg.grpo.group_size * cfg.grpo.tasks_per_step),
            max_new_tokens=cfg.grpo.max_new_tokens, temperature=cfg.grpo.temperature, timeout=env.timeout,
        )

    async def _restore(self) -> bool:
        """Load the latest checkpoint; True when the run had already finished."""
        path = latest_checkpoint(self.run_dir)
        self.state = await self.mlx.run(load_checkpoint, path, self.model, self.optimizer)
        self.sampler.load_state_dict(self.state.sampler)
        self._truncate_log(self.state.step)
        return self.state.step >= self.cfg.steps

    def _truncate_log(self, step: int) -> None:
        """Drop log lines of steps after the checkpoint (a killed run may have logged the lost step)."""
        log = self.run_dir / "log.jsonl"
        if not log.exists():
            return
        keep = []
        for line in log.read_text().splitlines():
            try:
                if json.loads(line).get("step", 0) <= step:
                    keep.append(line)
            except ValueError:
                continue  # a half-written last line
        tmp = log.with_suffix(".tmp")
        tmp.write_text("".join(k + "\n" for k in keep))
        tmp.replace(log)

    # ---- run --------------------------------------------------------------------------------------
    async def run(self, resume: bool) -> RunResult:
        self.run_dir.mkdir(parents=True, exist_ok=True)
        await self._setup()
        if resume:
            if await self._restore():
                return RunResult(self.run_dir, self.state, already_finished=True)
        (self.run_dir / "config.toml").write_text(dump_toml(self.cfg))
        try:
            with _progress(self.show_progress, self.cfg.steps, self.state.step) as bar:
                await self._guarded(self._eval_if_due)
                while self.state.step < self.cfg.steps:
                    before = self.sampler.state_dict()
                    try:
                        record = await self._train_step()
                    except OpenEnvError as err:
                        self.sampler.load_state_dict(before)  # the step is lost: its draws must repeat on resume
                        await self._fail(err)
                    self._log(record)
                    bar(record)
                    await self._guarded(self._eval_if_due)
                    if self.state.step % self.cfg.checkpoint.every == 0 and self.state.step < self.cfg.steps:
                        await self._checkpoint()
        finally:
            await self.runner.close()
        self.state.finished = True
        await self._checkpoint()
        if self.cfg.plot:
            self._plot()
        return RunResult(self.run_dir, self.state)

    async def _guarded(self, fn) -> None:
        try:
            await fn()
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
        self.state.sampler = self.sampler.state_dict()
        return await self.mlx.run(save_checkpoint, self.run_dir, self.model, self.optimizer, self.state, self.cfg.checkpoint.keep)

    async def _train_step(self) -> dict[str, Any]:
        from openenv_prime.mlx_trainer.grpo import group_advantages, make_batch, train_on_batch

        cfg = self.cfg.grpo
        step = self.state.step + 1
        await self.mlx.run(seed_step, self.cfg.seed, step)
        started = time.perf_counter()
        self.runner.times.generation = self.runner.times.environment = 0.0
        tasks = self.sampler.sample(cfg.tasks_per_step)
        groups = await self.runner.run_groups(tasks, cfg.group_size, step)

        sequences, advantages, with_signal = [], [], 0
        for task, group in zip(tasks, groups):
            rewards = [r.reward for r in group]
            self.sampler.update(task.key, rewards, costs=[len(r.completion.tokens) for r in group])
            adv = group_advantages(rewards, cfg.signal_tolerance, scale=cfg.loss != "dr_grpo")
            if adv is None:
                continue  # no signal: reported to the sampler above, left out of the loss
            with_signal += 1
            sequences += [(r.prompt, r.completion.tokens) for r in group]
            advantages += adv

        t_train = time.perf_counter()
        metrics = {"loss": 0.0, "kl": 0.0}
        if sequences:
            pad = self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None else 0
            metrics = await self.mlx.run(
                lambda: train_on_batch(self.model, self.optimizer, make_batch(sequences, advantages, pad), cfg))
        training = time.perf_counter() - t_train

        rollouts = [r for g in groups for r in g]
        new_tokens = sum(len(r.completion.tokens) for r in rollouts)
        self.state.step = step
        self.state.episodes += len(rollouts)
        self.state.tokens += new_tokens
        total = time.perf_counter() - started
        gen, env = self.runner.times.generation, self.runner.times.environment
        by_family: dict[str, list[float]] = {}
        for r in rollouts:
            by_family.setdefault(r.task.key, []).append(r.reward)
        return {
            "type": "step",
            "step": step,
            "episodes": self.state.episodes,
            "tokens": self.state.tokens,
            "reward": sum(r.reward for r in rollouts) / len(rollouts),
            "family_reward": {k: sum(v) / len(v) for k, v in sorted(by_family.items())},
            "groups": len(groups),
            "groups_with_signal": with_signal,
            "sampler": self.sampler.metrics(),
            "tokens_per_s": new_tokens / gen if gen > 0 else 0.0,
            "seconds": {"generation": gen, "environment": env, "training": training,
                        "other": max(0.0, total - gen - env - training)},
            "loss": metrics["loss"],
            "kl": metrics["kl"],
        }

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
            base_url=self.base_url, env_name=self.env_name, split=env.test_split, per_family=ev.tasks_per_family,
            seed=self.cfg.seed, family_field=env.family_field, system_prompt=self.cfg.grpo.system_prompt or None,
            observation_field=env.observation_field, action_field=env.action_field,
            max_concurrency=min(32, env.max_sessions), timeout=env.timeout,
        )
        policy = TrainerPolicy(self.model, self.tokenizer, ev.max_new_tokens or self.cfg.grpo.max_new_tokens, self.mlx)
        result = await run_eval_async(config, policy)
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
        self._log(record)

    def _log(self, record: dict[str, Any]) -> None:
        with open(self.run_dir / "log.jsonl", "a") as f:
            f.write(json.dumps(record) + "\n")
            f.flush()

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
