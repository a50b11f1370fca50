"""What an eval runs: which server, split and tasks, how observations become prompts, how long episodes last."""

from __future__ import annotations

from pydantic import ConfigDict, Field

from openenv_prime.client.engine.episode_settings import EpisodeSettings, ResetArguments
from openenv_prime.client.prompts.prompting import PromptSettings
from openenv_prime.evaluation.prompts import DEFAULT_SYSTEM_PROMPT


class EvalConfig(PromptSettings, EpisodeSettings, ResetArguments):
    """Every field has a working default (the local chain_sum server's test split); unknown fields are errors.

    What the model is shown (observation template, budget, hidden fields, action fields) is :class:`PromptSettings`,
    and how episodes are played and scored (max_steps, max_invalid_actions, reward_mode, reward_clip, invalid_flags,
    invalid_flags_in_state, invalid_errors) is :class:`EpisodeSettings`: the same keys as in the verifiers taskset and the MLX trainer."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    reset_choices = "choose the split with --split; per-task reset arguments go in a task list, --tasks"

    base_url: str = Field("http://127.0.0.1:8000", description="OpenEnv server (http(s):// or ws(s)://).")
    env_name: str | None = Field(None, description="Environment name; None means the only one the server lists.")
    tasks: str | None = Field(None, description="Task list (JSONL) to use instead of the server's Task API; episodes "
                              "reset with each line's reset arguments.")
    split: str | None = Field(None, description="Split to evaluate on (of the Task API, or of the task list); None "
                              "is the test split: the first of test, eval, validation the server lists.")
    per_family: int = Field(20, ge=1, description="Tasks drawn per family (all of them when a family has fewer).")
    families: list[str] | None = Field(None, description="Only these families (as strings); None means all.")
    seed: int = Field(0, description="Chooses the tasks; the same seed chooses the same tasks.")
    family_field: str | None = Field("auto", description="Task-spec field (a dotted path) whose value is the family "
                                     "key; None puts every task in one family, 'all'; 'auto' takes the field the server "
                                     "declares, else 'family' or 'tier' when the specs have it.")
    id_field: str = Field("id", description="Task-spec field with the durable task id (falls back to split/index).")
    system_prompt: str | None = Field(DEFAULT_SYSTEM_PROMPT, description="Our system message, sent where the "
                                      "environment brings no instructions of its own (theirs win); None sends none of ours.")
    max_concurrency: int = Field(32, ge=1, description="Episodes open at once; also the policy's batch size.")
    success_threshold: float = Field(1.0, description="An episode whose total reward reaches this counts as solved.")
    timeout: float = Field(30.0, gt=0, description="Seconds to wait for any one server answer.")
    check_reset: bool = Field(True, description="Before the eval, reset tasks in fresh sessions (task 0 twice) and fail "
                              "when the server does not play the task asked for; warn when the environment itself is random.")
