"""Configs for the OpenEnv taskset, its tasks and its env.

verifiers' CLI builds an all-defaults config before it applies flags, so every field here has a
default that works against a local chain_sum server (`openenv-prime serve chain-sum`)."""

from __future__ import annotations

from typing import Any, ClassVar

import verifiers.v1 as vf
from pydantic import Field, model_validator

from openenv_prime.client.engine.episode_rules import EpisodeRules
from openenv_prime.client.engine.episode_settings import EpisodeLimits, ResetArguments, RewardSettings, episode_rules
from openenv_prime.client.prompts.prompting import PromptSettings
from openenv_prime.client.server_settings import ServerSettings, Spelling


class OpenEnvTaskConfig(vf.TaskConfig, RewardSettings):
    """How an episode's per-step rewards become the trace's reward (`--env.taskset.task.reward-mode`,
    `--env.taskset.task.reward-clip`: the client's `RewardSettings`)."""


class OpenEnvTasksetConfig(vf.TasksetConfig, ServerSettings, PromptSettings, EpisodeLimits, ResetArguments):
    """Which OpenEnv server, which tasks, and how episodes talk to it (`--env.taskset.*`).

    The deployment (URL, limits) lives here and never in task data, so task keys and hashes stay the same when the
    server moves. The server and its tasks (`base_url`, `env_name`, `tasks`, `family_field`, `timeout`,
    `check_reset`) are the client's `ServerSettings`, what the model is shown (`observation_template`,
    `observation_budget`, `prompt_budget`, `hidden_fields`, `action_field`, `action_fields`) its `PromptSettings`, and
    when an episode stops (`max_steps`, `max_invalid_actions`, `invalid_flags`, `invalid_flags_in_state`,
    `invalid_errors`) its `EpisodeLimits`: the same keys as in eval, TRL and the MLX trainer."""

    reset_choices: ClassVar[str] = (
        "choose tasks with --env.taskset.splits or --select, and put per-task reset arguments in a task list "
        "(--env.taskset.tasks)")
    spelling: ClassVar[Spelling] = Spelling("--env.taskset.{kebab}", {
        "split": "--env.taskset.splits", "check_reset": "--env.taskset.check-reset False (check_reset = false in TOML)",
        "family_field": "--env.taskset.family-field (family_field)"}, none="null")
    """verifiers' flags (`--env.taskset.family-field`); a TOML file names the same keys with underscores."""

    splits: list[str] | None = Field(None, description="Splits to load, in order; None = every split the server (or "
                                     "the task list) lists.")
    page_size: int = Field(1024, ge=1, description="Tasks per `task_range` request at load.")
    id_field: str = Field("id", description="Spec field holding the durable task id; a spec without it is keyed by a "
                          "content hash (with a warning).")
    instructions: str | None = Field(
        None, description="Our system prompt, followed by the reply format from the action schema; sent only where "
        "the environment brings no instructions of its own (theirs win). None = 'You act in an environment.' (and, "
        "for a free-text action, how the reply is sent).")
    max_sessions: int | None = Field(None, ge=1, description="Open `/ws` sessions per process; None = unbounded (the "
                                     "server's cap still applies).")
    capacity_wait: float = Field(60.0, ge=0, description="Seconds to keep retrying a session the server refuses for "
                                 "capacity.")
    task: OpenEnvTaskConfig = Field(OpenEnvTaskConfig(), description="Config passed to each task, under "
                                    "`--env.taskset.task.*`: how an episode's rewards become its reward.")

    def rules(self, task: OpenEnvTaskConfig) -> EpisodeRules:
        """The episode rules for a task of this taskset (its reward mode and clip come from the task config)."""
        return episode_rules(self, task)

    @model_validator(mode="before")
    @classmethod
    def _renamed_timeouts(cls, data: Any) -> Any:
        old = sorted({"http_timeout", "message_timeout"} & set(data)) if isinstance(data, dict) else []
        if old:
            raise ValueError(f"{' and '.join(old)}: one setting now, timeout (seconds per Task API request or /ws reply, "
                             "as in every consumer): use --env.taskset.timeout")
        return data


class OpenEnvEnvConfig(vf.EnvConfig):
    """One seat, `player`, on the local subprocess runtime: the in-process chat harness needs
    no sandbox, and verifiers' default runtime is a remote Prime sandbox."""

    player: vf.AgentConfig = vf.AgentConfig(runtime=vf.SubprocessConfig())
