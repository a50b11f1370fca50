"""The greedy evals of a run: at step 0, every ``eval.every`` steps and at the last step, on the test split, scored
by the same episode engine and rules as training (``openenv_prime.evaluation``)."""

from __future__ import annotations

import sys
from pathlib import Path

from openenv_prime.mlx_trainer.config import TrainConfig
from openenv_prime.mlx_trainer.training.checkpoint import TrainerState
from openenv_prime.mlx_trainer.training.rundir import append_log
from openenv_prime.mlx_trainer.training.setup import TrainerParts


def eval_due(config: TrainConfig, step: int) -> bool:
    ev = config.eval
    if not ev.enabled:
        return False
    return step == 0 or step == config.steps or (ev.every > 0 and step % ev.every == 0)


async def evaluate_if_due(config: TrainConfig, parts: TrainerParts, state: TrainerState, run_dir: Path) -> None:
    """Evaluate the model at ``state.step`` if an eval is due and none was logged for that step; record it in
    ``state.evals`` and the log."""
    step = state.step
    if not eval_due(config, step) or any(e["step"] == step for e in state.evals):
        return
    from openenv_prime.evaluation import EvalConfig, run_eval_async
    from openenv_prime.mlx_trainer.rollouts.policy import TrainerPolicy

    await parts.runner.close()  # free the server's session slots for the eval's own sessions
    env, ev = config.environment, config.eval
    eval_config = EvalConfig(
        base_url=parts.base_url, env_name=parts.env_name, tasks=env.tasks, split=env.test_split, per_family=ev.tasks_per_family,
        seed=config.seed, family_field=env.family_field, system_prompt=config.grpo.system_prompt or None,
        **env.prompt_fields(),
        max_concurrency=min(32, env.max_sessions), timeout=env.timeout, check_reset=env.check_reset,
        max_steps=env.max_steps, max_invalid_actions=env.max_invalid_actions, reward_mode=env.reward_mode,
        reward_clip=env.reward_clip, invalid_flags=list(env.invalid_flags), invalid_flags_in_state=env.invalid_flags_in_state,
    )
    policy = TrainerPolicy(parts.model, parts.tokenizer, ev.max_new_tokens or config.grpo.max_new_tokens, parts.mlx)
    result = await run_eval_async(eval_config, policy)
    if not state.evals:  # how the test split and its families were chosen, once
        for choice in result.choices:
            print(f"eval: {choice}", file=sys.stderr)
    record = {
        "type": "eval",
        "step": step,
        "episodes": state.episodes,
        "tokens": state.tokens,
        "accuracy": {f.family: f.accuracy for f in result.families},
        "overall": result.accuracy,
        "n": {f.family: f.tasks for f in result.families},
    }
    state.evals.append(record)
    append_log(run_dir, record)
