"""Configs for the OpenEnv taskset, its tasks and its env.

verifiers' CLI builds an all-defaults config before it applies flags, so every field here has a
default that works against a local chain_sum server (`openenv-prime serve chain-sum`)."""

from __future__ import annotations

import verifiers.v1 as vf
from pydantic import Field

from openenv_prime.client.engine.episode_rules import EpisodeRules
from openenv_prime.client.engine.episode_settings import EpisodeLimits, ResetArguments, RewardSettings, episode_rules
from openenv_prime.client.prompts.prompting import PromptSettings


class OpenEnvTaskConfig(vf.TaskConfig, RewardSettings):
    """How an episode's per-step rewards become the trace's reward (`--env.taskset.task.reward-mode`,
    `--env.taskset.task.reward-clip`: the client's `RewardSettings`)."""


class OpenEnvTasksetConfig(vf.TasksetConfig, PromptSettings, EpisodeLimits, ResetArguments):
    """Which OpenEnv server, which tasks, and how episodes talk to it (`--env.taskset.*`).

    The deployment (URL, limits) lives here and never in task data, so task keys and hashes
    stay the same when the server moves. What the model is shown (`observation_template`,
    `observation_budget`, `prompt_budget`, `hidden_fields`, `action_field`, `action_fields`) is the client's
    `PromptSettings`, and when an episode stops (`max_steps`, `max_invalid_actions`, `invalid_flags`,
    `invalid_flags_in_state`, `invalid_errors`) its `EpisodeLimits`: the same keys as in eval and the MLX trainer."""

    reset_choices = ("choose tasks with --env.taskset.splits or --select, and put per-task reset arguments in a task "
                     "list (--env.taskset.tasks)")

    base_url: str = "http://127.0.0.1:8000"
    """OpenEnv server (http(s):// or ws(s)://)."""
    env_name: str | None = None
    """Environment on the server; None = the only one `/list_environments` lists."""
    tasks: str | None = None
    """Task list (JSONL; one task per line with its `reset` arguments) to use instead of the server's
    Task API, for a server without one; None = the Task API."""
    splits: list[str] | None = None
    """Splits to load, in order; None = every split the server (or the task list) lists."""
    page_size: int = Field(1024, ge=1)
    """Tasks per `task_range` request at load."""
    id_field: str = "id"
    """Spec field holding the durable task id; a spec without it is keyed by a content hash (with a warning)."""
    family_field: str | None = "auto"
    """Spec field (a dotted path) grouping tasks into families (curriculum keys); None = one family, "all";
    "auto" = the field the server declares for the split, else `family` or `tier` when the specs have it
    (openenv_prime.client.tasks.families). A spec without the chosen field is an error."""
    instructions: str | None = None
    """Our system prompt, followed by the reply format from the action schema; sent only where the environment
    brings no instructions of its own (theirs win). None = "You act in an environment." (and, for a free-text
    action, how the reply is sent)."""
    check_reset: bool = True
    """At load, reset tasks in fresh sessions (task 0 twice) and fail when the server does not play the task asked for;
    warn when the environment itself is random (see openenv_prime.client.tasks.resetcheck)."""
    max_sessions: int | None = Field(None, ge=1)
    """Open `/ws` sessions per process; None = unbounded (the server's cap still applies)."""
    capacity_wait: float = Field(60.0, ge=0)
    """Seconds to keep retrying a session the server refuses for capacity."""
    http_timeout: float = Field(10.0, gt=0)
    """Seconds per Task API request."""
    message_timeout: float = Field(30.0, gt=0)
    """Seconds per `/ws` reply."""
    task: OpenEnvTaskConfig = OpenEnvTaskConfig()

    def rules(self, task: OpenEnvTaskConfig) -> EpisodeRules:
        """The episode rules for a task of this taskset (its reward mode and clip come from the task config)."""
        return episode_rules(self, task)


class OpenEnvEnvConfig(vf.EnvConfig):
    """One seat, `player`, on the local subprocess runtime: the in-process chat harness needs
    no sandbox, and verifiers' default runtime is a remote Prime sandbox."""

    player: vf.AgentConfig = vf.AgentConfig(runtime=vf.SubprocessConfig())
