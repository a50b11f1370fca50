"""The greedy evals of a run, through the package's one eval harness (``openenv_prime.evaluation.EvalHarness``): at
step 0, every ``eval.every`` steps and at the last step, on the test split, scored by the same episode engine and rules
as training, on the prompts training uses (the same system prompt and reply format)."""

from __future__ import annotations

from pathlib import Path

from openenv_prime.evaluation.config import EvalConfig
from openenv_prime.evaluation.episodes import EPISODES_FILE
from openenv_prime.evaluation.harness import EvalHarness
from openenv_prime.evaluation.schedule import EvalSchedule
from openenv_prime.mlx_trainer.config import MLX_EVAL_SPELLING, TrainConfig
from openenv_prime.mlx_trainer.training.checkpoint import TrainerState
from openenv_prime.mlx_trainer.training.rundir import LOG
from openenv_prime.mlx_trainer.training.setup import TrainerParts


def eval_schedule(config: TrainConfig) -> EvalSchedule:
    """The run's eval steps: 0 (unless ``eval.first`` is off), every ``eval.every`` and the last (none when evals are
    off)."""
    ev = config.eval
    if not ev.enabled:
        return EvalSchedule(first=False)
    return EvalSchedule(every=ev.every, first=ev.first, last=config.steps)


def eval_config(config: TrainConfig, parts: TrainerParts) -> EvalConfig:
    """The eval of the run's test split with the training prompts: the system prompt as training sends it (the
    reply format included when ``grpo.system_prompt`` is empty) and the environment's prompt settings and rules."""
    env, ev = config.environment, config.eval
    return EvalConfig.of_training(
        env, max_sessions=env.max_sessions, base_url=parts.base_url, env_name=parts.env_name, split=env.test_split,
        per_family=ev.tasks_per_family, seed=config.seed, system_prompt=config.grpo.system_prompt,
    )


async def evaluate_if_due(config: TrainConfig, parts: TrainerParts, state: TrainerState, run_dir: Path) -> None:
    """Evaluate the model at ``state.step`` if the schedule says so and no eval was logged for that step; the record
    goes to ``state.evals`` and the run's log, with the sampler's episodes and cost and the trainer's tokens; the
    first ``eval.episodes_per_family`` episodes of each family go to the run's episodes.jsonl."""
    schedule = eval_schedule(config)
    if not schedule.due(state.step):  # most steps: no eval config built, nothing validated
        return
    kept = config.eval.episodes_per_family
    harness = EvalHarness(eval_config(config, parts), schedule, log=run_dir / LOG, done=state.evals, spelling=MLX_EVAL_SPELLING,
                          episodes=run_dir / EPISODES_FILE if kept else None, episodes_per_family=kept or None)
    if not harness.due(state.step):  # evaluated before a resume
        return
    from openenv_prime.mlx_trainer.rollouts.policy import TrainerPolicy

    await parts.runner.close()  # free the server's session slots for the eval's own sessions
    policy = TrainerPolicy(parts.model, parts.tokenizer, config.eval.max_new_tokens or config.grpo.max_new_tokens, parts.mlx)
    record = await harness.maybe_run_async(state.step, parts.sampler, policy=policy, tokens=state.tokens)
    state.evals.append(record)
