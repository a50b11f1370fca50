"""A run's training steps: sample tasks, play G episodes each, report every group to the sampler, train on the
groups with signal, log; and the checkpoints that save them.

Order inside a step matters: ``sampler.update`` sees every scored group *before* groups without signal are dropped
from the loss, so a curriculum learns which families are too easy or too hard. A step either completes (its update,
counters and log line written by one job on the main thread) or leaves no trace (the sampler rewound), so the
checkpoint written after an environment failure or a Ctrl-C is exactly the last completed step.

While a step trains, the next step's tasks are already drawn and their first wave reset (``environment.prefetch``):
the draw comes right after this step's updates, exactly where it would come otherwise, and the sampler state from
before that draw is what a checkpoint saves, so a resumed run draws the same tasks.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Awaitable, TypeVar

from openenv_prime.client.engine import spend
from openenv_prime.client.wire.errors import OpenEnvError
from openenv_prime.mlx_trainer.config import TrainConfig
from openenv_prime.mlx_trainer.errors import TrainingError
from openenv_prime.mlx_trainer.report.metrics import rollout_summary, sampler_log_metrics
from openenv_prime.mlx_trainer.rollouts.runner import OpenedWave, RolloutTimes
from openenv_prime.mlx_trainer.training.checkpoint import TrainerState, save_checkpoint, seed_step
from openenv_prime.mlx_trainer.training.evals import eval_schedule
from openenv_prime.mlx_trainer.training.rundir import append_log
from openenv_prime.mlx_trainer.training.setup import TrainerParts

T = TypeVar("T")


@dataclass
class _Prefetch:
    """The next step's tasks, drawn early, their first wave being reset, and the sampler state before the draw."""

    tasks: list
    sampler_state: dict[str, Any]
    wave: asyncio.Task


class TrainingSteps:
    """One run's steps over its parts and state; holds the next step's early draw between steps."""

    def __init__(self, config: TrainConfig, run_dir: Path, parts: TrainerParts, state: TrainerState):
        self.config = config
        self.run_dir = run_dir
        self.parts = parts
        self.state = state
        self._prefetch: _Prefetch | None = None

    # ---- checkpoints ------------------------------------------------------------------------------
    def sampler_state(self) -> dict[str, Any]:
        """The sampler's state as of the last completed step (before an early draw for the next one)."""
        return self._prefetch.sampler_state if self._prefetch else self.parts.sampler.state_dict()

    async def checkpoint(self) -> Path:
        """Save the last completed step."""
        self.state.sampler = self.sampler_state()
        parts = self.parts
        return await parts.mlx.run(save_checkpoint, self.run_dir, parts.model, parts.optimizer, self.state,
                                   self.config.checkpoint.keep)

    async def guarded(self, work: Awaitable[T]) -> T:
        """``work``'s result; when the environment fails, a checkpoint of the last completed step and a TrainingError
        that says how to continue. (The runner already dropped its sockets when the error came out of it.)"""
        try:
            return await work
        except OpenEnvError as err:
            path = await self.checkpoint()
            raise TrainingError(
                f"the environment at {self.parts.base_url} failed during step {self.state.step + 1}: {err}\n"
                f"A checkpoint of step {self.state.step} is in {path}; once the server is back, continue with "
                f"`openenv-prime train --resume --out {self.run_dir}`"
            ) from err

    # ---- steps ------------------------------------------------------------------------------------
    async def step(self) -> dict[str, Any]:
        """One training step that either completes or leaves no trace (the sampler rewound), so a checkpoint taken
        after an error or an interrupt is exactly the last completed step; returns its log record."""
        before = self.sampler_state()
        step = self.state.step + 1
        try:
            return await self._train_step()
        except BaseException:
            await self.parts.mlx.barrier()  # a commit already running on the main thread finishes first
            if self.state.step < step:
                await self.drop_prefetch()
                self.parts.sampler.load_state_dict(before)  # the step is lost: its draws must repeat on resume
            raise

    async def drop_prefetch(self) -> None:
        """Give back an early draw that will not be played: rewind the sampler, stop the resets, close their sockets."""
        prefetch, self._prefetch = self._prefetch, None
        if prefetch is None:
            return
        self.parts.sampler.load_state_dict(prefetch.sampler_state)
        prefetch.wave.cancel()
        await asyncio.gather(prefetch.wave, return_exceptions=True)
        await self.parts.runner.close()

    def _prefetch_next(self, step: int) -> None:
        """Draw step ``step + 1``'s tasks now and reset its first wave in the background while ``step`` trains."""
        if not self.config.environment.prefetch or step >= self.config.steps or eval_schedule(self.config).due(step):
            return  # an eval after this step closes the sockets; the last step has no next
        grpo, sampler = self.config.grpo, self.parts.sampler
        state = sampler.state_dict()
        tasks = sampler.sample(grpo.tasks_per_step)
        wave = asyncio.create_task(self.parts.runner.open_first_wave(tasks, grpo.group_size, step + 1))
        self._prefetch = _Prefetch(tasks, state, wave)

    async def _take_prefetch(self) -> tuple[list | None, OpenedWave | None, float]:
        """This step's tasks and reset first wave, if drawn early ((None, None) otherwise), and the seconds spent
        waiting for that wave: what the overlap with the previous step did not hide."""
        prefetch, self._prefetch = self._prefetch, None
        if prefetch is None:
            return None, None, 0.0
        t0 = time.perf_counter()
        wave = await prefetch.wave
        return prefetch.tasks, wave, time.perf_counter() - t0

    async def _train_step(self) -> dict[str, Any]:
        from openenv_prime.mlx_trainer.training.grpo import group_advantages

        grpo, parts = self.config.grpo, self.parts
        step = self.state.step + 1
        await parts.mlx.run(seed_step, self.config.seed, step)
        started = time.perf_counter()
        tasks, first_wave, waited = await self._take_prefetch()
        if tasks is None:
            tasks = parts.sampler.sample(grpo.tasks_per_step)
        played = await parts.runner.play(tasks, grpo.group_size, step, first_wave)
        times = RolloutTimes(played.times.generation, played.times.environment + waited)

        batch: dict[str, list] = {"sequences": [], "masks": [], "advantages": []}
        with_signal = unscored_groups = 0
        group_rewards = []  # per group: what the sampler heard, for calibrating samplers (studies/worlds/calibration.py)
        for task, group in zip(tasks, played.groups):
            scored = [r for r in group if r.reward is not None]  # a missing reward is left out, never 0.0
            if not scored:
                unscored_groups += 1
                continue
            rewards = [r.reward for r in scored]
            group_rewards.append({"key": task.key, "index": task.index, "rewards": rewards})
            source = self.config.sampler.cost
            costs = [r.service_spend if source == "spend" else r.generated_tokens for r in scored]
            spend.update(parts.sampler, task, rewards, spend.group_costs(costs), source=source,
                         setting="[sampler] cost = \"spend\"")
            adv = (group_advantages(rewards, grpo.signal_tolerance, scale=grpo.loss != "dr_grpo")
                   if len(scored) >= 2 else None)
            if adv is None:
                continue  # no signal: reported to the sampler above, left out of the loss
            with_signal += 1
            for rollout, advantage in zip(scored, adv):  # an episode the prompt budget cut is several sequences
                batch["sequences"] += [(s.prompt, s.completion) for s in rollout.sequences]
                batch["masks"] += [s.completion_mask for s in rollout.sequences]
                batch["advantages"] += [advantage] * len(rollout.sequences)

        rollouts = [r for g in played.groups for r in g]
        record = {
            "type": "step",
            "step": step,
            **rollout_summary(rollouts),
            "groups": len(played.groups),
            "groups_with_signal": with_signal,
            "groups_unscored": unscored_groups,
            "group_rewards": group_rewards,
            "sampler": sampler_log_metrics(parts.sampler, self.config.sampler.log_keys),
            "prefetch_seconds": first_wave.seconds if first_wave else 0.0,
        }
        self._prefetch_next(step)
        return await parts.mlx.run(self._commit, step, batch, rollouts, record, started, times)

    def _commit(self, step: int, batch: dict[str, list], rollouts: list, record: dict[str, Any], started: float,
                times: RolloutTimes) -> dict[str, Any]:
        """On the main thread, all or nothing: the optimizer update, the counters and the step's log line."""
        from openenv_prime.mlx_trainer.training.grpo import make_batch, train_on_batch

        parts = self.parts
        t_train = time.perf_counter()
        metrics = {"loss": 0.0, "kl": 0.0}
        if batch["sequences"]:
            pad = parts.tokenizer.pad_token_id if parts.tokenizer.pad_token_id is not None else 0
            packed = make_batch(batch["sequences"], batch["advantages"], pad, completion_masks=batch["masks"])
            metrics = train_on_batch(parts.model, parts.optimizer, packed, self.config.grpo)
        training = time.perf_counter() - t_train
        new_tokens = sum(r.generated_tokens for r in rollouts)
        self.state.step = step
        self.state.episodes += len(rollouts)
        self.state.tokens += new_tokens
        total = time.perf_counter() - started
        gen, env = times.generation, times.environment
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
