"""``OpenEnvTRL``: the pieces a ``GRPOTrainer`` needs to train on an OpenEnv server with a task sampler.

    openenv = OpenEnvTRL(OpenEnvTRLConfig(base_url=url, group_size=8))
    args = GRPOConfig(num_generations=8, shuffle_dataset=False, ignore_data_skip=True, max_steps=100, ...)
    trainer = GRPOTrainer(model, reward_funcs=[openenv.reward], train_dataset=openenv.dataset(args), args=args)
    openenv.attach(trainer, schedule=EvalSchedule(every=20), per_family=32)   # evals, checkpoints of the sampler
    trainer.train()

Text mode (the default) trains on environments whose episode is one reply (reasoning-gym's tiers, chain_sum): each
row's prompt is the chat every consumer shows for the task, and the reward function plays each completion as the
reply. Tool mode (``tool_mode=True``; pass ``environment_factory=openenv.environment_factory()``) trains multi-step
environments through TRL's tool loop, one environment object per rollout. Settings that would break the sampler's
bookkeeping are refused before training, naming the setting (:meth:`check`).

On several processes (``torchrun``, ``accelerate launch``) every process builds its own ``OpenEnvTRL`` with the same
config: the copies of the sampler draw the same rows and see every group (:mod:`.replicas`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Sequence

from openenv_prime.client.setup import EnvironmentSetup
from openenv_prime.evaluation.config import EvalConfig
from openenv_prime.evaluation.episodes import DEFAULT_EPISODES_PER_FAMILY, EPISODES_FILE
from openenv_prime.evaluation.harness import EvalHarness, OnResult
from openenv_prime.evaluation.schedule import EvalSchedule
from openenv_prime.samplers import make_sampler
from openenv_prime.trl.config import TRL_EVAL_SPELLING, OpenEnvTRLConfig
from openenv_prime.trl.environment import TaskEnvironment
from openenv_prime.trl.replicas import Replicas
from openenv_prime.trl.rewards import OpenEnvReward
from openenv_prime.trl.rows import SamplerRows
from openenv_prime.trl.timers import Timers


class OpenEnvTRL:
    """The server's tasks, the sampler over them, and the dataset, reward function, environment factory and
    callback that connect them to TRL. Build it before the trainer: it reads the server's tasks and checks it."""

    def __init__(self, config: OpenEnvTRLConfig | None = None, *, tool_mode: bool = False,
                 score: Callable[..., Sequence[float | None]] | None = None, **settings: Any):
        if config is not None and settings:
            raise TypeError("pass an OpenEnvTRLConfig or its settings as keywords, not both")
        self.config = config if config is not None else OpenEnvTRLConfig(**settings)
        self.tool_mode = tool_mode
        self.timers = Timers()
        self.env = TaskEnvironment(self.config)
        try:
            self._check_test_split()
        except Exception:
            self.env.close()
            raise
        try:
            self.sampler = make_sampler(self.config.sampler, self.env.tasks, **self.config.sampler_kwargs,
                                        defaults={"group_size": self.config.group_size, "seed": self.config.seed})
        except (TypeError, ValueError) as err:
            self.env.close()
            raise ValueError(f"sampler_kwargs: {err}") from None
        self.rows: SamplerRows | None = None
        self.reward = OpenEnvReward(self.env, None, self.config.group_size, timers=self.timers, score=score)

    def _check_test_split(self) -> None:
        """A ``test_split`` the server does not list is refused now, naming the splits it has, not at the first eval
        after the model has loaded (None, the test split by rule, is chosen when the evals are attached)."""
        if self.config.test_split is not None:
            with EnvironmentSetup.of(self.config) as setup:
                setup.choose_split(self.config.test_split, setting=TRL_EVAL_SPELLING("split"))

    # ---- the pieces ---------------------------------------------------------------------------------
    def example_prompts(self, count: int = 1) -> list[list[dict[str, str]]]:
        """The prompts of the first ``count`` train tasks as a row holds them (the chat: the system prompt, then the
        first observation), to read what the model will be asked before training; each task is reset on the server,
        and the sampler draws nothing. Render one as the model sees it with ``tokenizer.apply_chat_template(prompt,
        tokenize=False, add_generation_prompt=True)``."""
        tasks = self.env.tasks[:count]
        return [self.env.tool_prompt() for _ in tasks] if self.tool_mode else self.env.prompts(tasks)

    def dataset(self, args: Any):
        """The ``train_dataset``: rows drawn from the sampler one generation batch at a time, the whole batch of all
        processes on every process (checks ``args``)."""
        self.check(args)
        rows_per_batch = args.generation_batch_size // args.num_generations
        replicas = Replicas.of(args)
        sessions = self.env.share_sessions(replicas.count)
        if self.tool_mode and args.generation_batch_size // replicas.count > sessions:
            raise ValueError(
                f"tool mode holds one session per rollout of a process's generation batch "
                f"({args.generation_batch_size // replicas.count} = GRPOConfig.generation_batch_size "
                f"{args.generation_batch_size} / {replicas.count} process(es)), more than the {sessions} each process "
                f"may open (OpenEnvTRLConfig.max_sessions={self.config.max_sessions} for the whole run); lower "
                "per_device_train_batch_size or steps_per_generation, or raise max_sessions up to what the server admits")
        if self.rows is None or self.rows.rows_per_batch != rows_per_batch or self.rows.replicas.count != replicas.count:
            self.rows = SamplerRows(self.env, self.sampler, rows_per_batch, tool_mode=self.tool_mode, timers=self.timers,
                                    replicas=replicas)
            self.reward.rows = self.rows
        return self.rows.dataset()

    def environment_factory(self) -> type:
        """The class for ``GRPOTrainer(environment_factory=...)`` (tool mode only)."""
        if not self.tool_mode:
            raise ValueError("environment_factory() is for tool mode: build OpenEnvTRL(..., tool_mode=True)")
        if self.rows is None:
            raise ValueError("call dataset(args) before environment_factory(): the environments play the dataset's rows")
        from openenv_prime.trl.tools import environment_factory

        return environment_factory(self.env, self.rows)

    def eval_config(self, per_family: int = 20, **overrides: Any) -> EvalConfig:
        """The eval of the test split with the prompts training uses (the same system prompt, reply format,
        prompt settings and episode rules)."""
        c = self.config
        return EvalConfig.of_training(c, max_sessions=self.env.session_limit, **{
            "split": c.test_split, "per_family": per_family, "seed": c.seed, "system_prompt": c.system_prompt, **overrides})

    def attach(self, trainer: Any, *, schedule: EvalSchedule | None = None, per_family: int = 20,
               max_new_tokens: int | None = None, log: str | Path | None = None,
               on_result: OnResult | Sequence[OnResult] = (), lockstep: bool | None = None,
               episodes: str | Path | None = None, episodes_per_family: int | None = DEFAULT_EPISODES_PER_FAMILY):
        """Add the callback to ``trainer``: evals on ``schedule`` (None: none) with the trainer's model, greedy, up to
        ``max_new_tokens`` (default: the run's ``max_completion_length``), records appended to ``log`` (JSONL) by
        the main process, and each eval's first ``episodes_per_family`` episodes of every family (what the model was
        asked and replied, each step's reward) appended to ``episodes`` (default: ``episodes.jsonl`` beside ``log``;
        `openenv-prime show` prints them). On several processes each plays a share of the eval's tasks;
        ``lockstep`` makes their model calls equal in number (None: only where the model is sharded, FSDP or ZeRO-3,
        which needs it)."""
        from openenv_prime.trl.callback import OpenEnvCallback

        self.check(trainer.args)
        if self.rows is None:
            raise ValueError("train_dataset is not this OpenEnvTRL's dataset: pass train_dataset=openenv.dataset(args)")
        harness = None
        if schedule is not None:
            if episodes is None and log is not None:
                episodes = Path(log).with_name(EPISODES_FILE)
            harness = EvalHarness(self.eval_config(per_family), schedule, log=log, on_result=on_result,
                                  spelling=TRL_EVAL_SPELLING, episodes=episodes, episodes_per_family=episodes_per_family)
        callback = OpenEnvCallback(self, trainer, harness, lockstep=lockstep,
                                   max_new_tokens=max_new_tokens or trainer.args.max_completion_length)
        trainer.add_callback(callback)
        return callback

    # ---- checks -------------------------------------------------------------------------------------
    def check(self, args: Any) -> None:
        """Refuse GRPOConfig settings under which the sampler would miss groups or see them twice."""
        if args.num_generations != self.config.group_size:
            raise ValueError(f"GRPOConfig.num_generations={args.num_generations} differs from the sampler's "
                             f"group_size={self.config.group_size}; set both to the same number of rollouts per task")
        if args.shuffle_dataset:
            raise ValueError("GRPOConfig.shuffle_dataset=True would reorder the sampler's draws; set shuffle_dataset=False")
        if not args.ignore_data_skip:
            raise ValueError("GRPOConfig.ignore_data_skip=False would draw and drop the skipped batches on resume "
                             "(the sampler's state is restored instead); set ignore_data_skip=True")
        strategy = getattr(args.save_strategy, "value", args.save_strategy)
        if strategy not in ("steps", "no"):
            raise ValueError(f"GRPOConfig.save_strategy={strategy!r} saves after the step's callbacks ran, so its "
                             "checkpoints would hold a stale sampler state or none; use save_strategy='steps' "
                             "(with save_steps) or 'no'")
        if args.world_size > 1 and getattr(args.accelerator_config, "split_batches", False):
            raise ValueError("accelerator_config.split_batches=True cuts each process's batch again, so a generation "
                             "batch no longer spans the processes as TRL counts it; leave split_batches=False")

    def close(self) -> None:
        self.env.close()
