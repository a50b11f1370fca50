"""What an eval runs: which server, split and tasks, how observations become prompts, how long episodes last."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import ConfigDict, Field, field_validator

from openenv_prime.client.episode_rules import DEFAULT_RULES
from openenv_prime.client.prompting import PromptSettings
from openenv_prime.client.rewards import check_clip
from openenv_prime.evaluation.prompts import DEFAULT_SYSTEM_PROMPT


class EvalConfig(PromptSettings):
    """Every field has a working default (the local chain_sum server's test split); unknown fields are errors.

    What the model is shown (observation template, budget, hidden fields, action fields) is :class:`PromptSettings`,
    the same keys as in the verifiers taskset and the MLX trainer."""

    model_config = ConfigDict(extra="forbid", frozen=True)

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
    system_prompt: str | None = Field(DEFAULT_SYSTEM_PROMPT, description="System message; None sends none.")
    reset_kwargs: dict[str, Any] = Field(default_factory=dict, description="Extra arguments for every reset.")
    max_concurrency: int = Field(32, ge=1, description="Episodes open at once; also the policy's batch size.")
    # the episode rules (client/episode_rules.py): the same defaults as the trainer and the verifiers taskset
    max_steps: int = Field(DEFAULT_RULES.max_steps, ge=1,
                           description="Environment steps per episode before it is cut off (reported as truncated).")
    max_invalid_actions: int = Field(DEFAULT_RULES.max_invalid_actions, ge=0,
                                     description="Invalid replies fed back to the model; the next one ends the episode.")
    reward_mode: Literal["sum", "last", "max"] = Field(DEFAULT_RULES.reward_mode,
                                                       description="How the scored steps' rewards become the episode's reward.")
    reward_clip: tuple[float, float] | None = Field(DEFAULT_RULES.reward_clip, description="Clip the episode's reward into [low, high].")
    invalid_flags: list[str] = Field(list(DEFAULT_RULES.invalid_flags),
                                     description="Observation/metadata keys that, set to true, mark a step's action invalid.")
    invalid_flags_in_state: bool = Field(DEFAULT_RULES.invalid_flags_in_state,
                                         description="Also look for the invalid flags in state() when the environment ends an episode.")
    success_threshold: float = Field(1.0, description="An episode whose total reward reaches this counts as solved.")
    timeout: float = Field(30.0, gt=0, description="Seconds to wait for any one server answer.")
    check_reset: bool = Field(True, description="Before the eval, reset tasks in fresh sessions (task 0 twice) and fail "
                              "when the server does not play the task asked for; warn when the environment itself is random.")

    @field_validator("reward_clip")
    @classmethod
    def _ordered(cls, clip: tuple[float, float] | None) -> tuple[float, float] | None:
        return check_clip(clip)

    @field_validator("reset_kwargs")
    @classmethod
    def _reset_kwargs_leave_the_task_alone(cls, value: dict[str, Any]) -> dict[str, Any]:
        taken = sorted({"split", "index", "episode_id"} & set(value))
        if taken:
            raise ValueError(
                f"reset_kwargs may not set {taken}: the eval sets them for each task (choose the split with --split; "
                "per-task reset arguments go in a task list, --tasks)"
            )
        return value
