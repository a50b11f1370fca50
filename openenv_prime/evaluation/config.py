"""What an eval runs: which server, split and tasks, how observations become prompts, how long episodes last."""

from __future__ import annotations

from typing import ClassVar

from pydantic import ConfigDict, Field

from openenv_prime.client.engine.episode_settings import EpisodeSettings, ResetArguments
from openenv_prime.client.prompts.prompting import PromptSettings
from openenv_prime.client.server_settings import ServerSettings, Spelling

DEFAULT_SYSTEM_PROMPT = "Solve the task. Reply with only the final answer, nothing else."
"""Eval's system message where the environment brings none: short, and asking for the bare answer that exact-match
rewards need."""


class EvalConfig(ServerSettings, PromptSettings, EpisodeSettings, ResetArguments):
    """Every field has a working default (the local chain_sum server's test split); unknown fields are errors.

    The server and its tasks (base_url, env_name, tasks, family_field, timeout, check_reset) are
    :class:`ServerSettings`, what the model is shown (observation template, budget, hidden fields, action fields) is :class:`PromptSettings`,
    and how episodes are played and scored (max_steps, max_invalid_actions, reward_mode, reward_clip, invalid_flags,
    invalid_flags_in_state, invalid_errors) is :class:`EpisodeSettings`: the same keys as in the verifiers taskset and the MLX trainer."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    reset_choices: ClassVar[str] = "choose the split with --split; per-task reset arguments go in a task list, --tasks"
    spelling: ClassVar[Spelling] = Spelling("--{kebab}", {"check_reset": "--no-reset-check",
                                                          "invalid_errors": "--no-invalid-errors"}, none="none")
    """`openenv-prime eval`'s flags: one per field."""

    split: str | None = Field(None, description="Split to evaluate on (of the Task API, or of the task list); None "
                              "is the test split: the first of test, eval, validation the server lists.")
    per_family: int = Field(20, ge=1, description="Tasks drawn per family (all of them when a family has fewer).")
    families: list[str] | None = Field(None, description="Only these families (as strings); None means all.")
    seed: int = Field(0, description="Chooses the tasks; the same seed chooses the same tasks.")
    id_field: str = Field("id", description="Task-spec field with the durable task id (falls back to split/index).")
    system_prompt: str | None = Field(DEFAULT_SYSTEM_PROMPT, description="Our system message, sent where the "
                                      "environment brings no instructions of its own (theirs win); None sends none of ours.")
    max_concurrency: int = Field(32, ge=1, description="Episodes open at once; also the policy's batch size.")
    success_threshold: float = Field(1.0, description="An episode whose total reward reaches this counts as solved.")

    @classmethod
    def of_training(cls, training: ServerSettings, *, max_sessions: int, **fields) -> "EvalConfig":
        """The eval a trainer runs during training: its config's server, prompt settings, episode rules and reset
        arguments (so an eval asks what training asks), at most 32 episodes at once within its ``max_sessions``, and
        ``fields`` (the split, per_family, seed, system prompt...) over them."""
        return cls(**{**training.server_fields(), **training.prompt_fields(), **training.episode_fields(),
                      "reset_kwargs": training.reset_kwargs, "max_concurrency": min(32, max_sessions), **fields})
