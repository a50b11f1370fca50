"""A run of the MLX trainer as an eval policy, for `openenv-prime eval --mlx RUN` (no model server).

RUN is a run directory (its newest checkpoint is taken) or one of its checkpoints (``RUN/checkpoints/step_N``). The
model is built as the run built it (its ``config.toml``: the base model, its quantization, the LoRA layers) with the
checkpoint's adapters, and it answers as the run's in-training evals do (:class:`~.rollouts.policy.TrainerPolicy`):
the prompts rendered by the tokenizer's chat template, the batch generated at once, greedily. The eval settings the
run's evals used (the test split, the system prompt, prompt settings, episode rules, tasks per family, reply
length) come with it, and so does its environment server (an embedded one is started as the run started it), so the
same checkpoint gets the same eval.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from openenv_prime.evaluation.config import EvalConfig
from openenv_prime.evaluation.policy import Reply
from openenv_prime.mlx_trainer.config import TrainConfig, load_config

MLX_MISSING = "--mlx needs mlx and mlx-lm: pip install \"openenv-prime[mlx]\""
"""What to install, told where the imports fail."""


@dataclass(frozen=True)
class SavedRun:
    """The run, its config and the checkpoint evaluated; notes for the user (which checkpoint was taken)."""

    run_dir: Path
    config: TrainConfig
    checkpoint: Path
    notes: list[str] = field(default_factory=list)

    def eval_config(self, base_url: str) -> EvalConfig:
        """The eval the run's own evals ran (``training/evals.py``), on the server at ``base_url``."""
        env, ev = self.config.environment, self.config.eval
        return EvalConfig.of_training(env, max_sessions=env.max_sessions, base_url=base_url, split=env.test_split,
                                      per_family=ev.tasks_per_family, seed=self.config.seed,
                                      system_prompt=self.config.grpo.system_prompt)

    def server(self) -> AbstractContextManager[str]:
        """The run's environment server: its ``base_url``, or its embedded server started for the eval and stopped
        after it (as the run started it: ``environment.embedded`` with its datasets, tiers and split sizes)."""
        from openenv_prime.mlx_trainer.training.setup import environment_url

        return environment_url(self.config.environment)

    @property
    def max_new_tokens(self) -> int:
        """The reply length of the run's evals."""
        return self.config.eval.max_new_tokens or self.config.grpo.max_new_tokens

    def about(self) -> dict[str, Any]:
        """The report's account of the model."""
        return {"run": str(self.run_dir), "checkpoint": self.checkpoint.name, "base_model": self.config.model.path}


def find_run(path: str | Path) -> SavedRun:
    """The run and checkpoint ``path`` names; a clear error where it names neither (or where mlx is missing)."""
    _require_mlx()
    from openenv_prime.mlx_trainer.training.checkpoint import latest_checkpoint
    from openenv_prime.mlx_trainer.training.rundir import CONFIG

    given = Path(path)
    if (given / "adapters.safetensors").is_file() and (given.parent.parent / CONFIG).is_file():
        run_dir, checkpoint, notes = given.parent.parent, given, []
    elif (given / CONFIG).is_file():
        run_dir, checkpoint = given, latest_checkpoint(given)
        if checkpoint is None or not (checkpoint / "adapters.safetensors").is_file():
            raise FileNotFoundError(f"--mlx {given} has no checkpoint with adapters.safetensors yet; train a step first")
        notes = [f"--mlx: evaluating {given}'s newest checkpoint, {checkpoint.name}"]
    else:
        raise FileNotFoundError(f"--mlx {given} is neither an `openenv-prime train` run directory (with {CONFIG}) nor "
                                "one of its checkpoints (RUN/checkpoints/step_N with adapters.safetensors)")
    return SavedRun(run_dir, load_config(run_dir / CONFIG), checkpoint, notes)


def load_run_policy(run: SavedRun, max_new_tokens: int):
    """The run's model with the checkpoint's adapters, as a plain function ``prompts -> replies`` that generates on
    the thread calling it (MLX's streams are per thread)."""
    from openenv_prime.mlx_trainer.model.sources import load_base
    from openenv_prime.mlx_trainer.rollouts.generation import generate, render_prompt
    from openenv_prime.mlx_trainer.training.lora import apply_lora, load_adapters

    m = run.config.model
    model, tokenizer = load_base(m.path, m.quantize_bits, m.quantize_group_size)
    apply_lora(model, run.config.lora)
    load_adapters(model, run.checkpoint / "adapters.safetensors")
    model.eval()

    def policy(prompts: list[list[dict]]) -> list[Reply]:
        ids = [render_prompt(tokenizer, messages) for messages in prompts]
        completions = generate(model, tokenizer, ids, max_tokens=max_new_tokens, temperature=0.0)
        return [Reply(c.text, len(c.tokens)) for c in completions]

    return policy


def _require_mlx() -> None:
    try:
        import mlx.core  # noqa: F401  (on Linux it needs the mlx[cpu] wheel the extra brings)
        import mlx_lm  # noqa: F401
    except ImportError as err:
        raise ImportError(f"{MLX_MISSING} ({err})") from err
