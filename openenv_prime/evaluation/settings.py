"""How a user sets each `EvalConfig` field: `openenv-prime eval`'s flags, the names the eval's errors and notes use
unless its caller passes its own (the MLX trainer names its config keys, e.g. `environment.test_split`)."""

from __future__ import annotations

# EvalConfig field -> the flag that sets it (base_url also comes from --serve-chain-sum); `check_reset`'s is the
# one that turns the check off
CONFIG_FLAGS = {
    "base_url": "--base-url", "env_name": "--env-name", "tasks": "--tasks", "split": "--split",
    "per_family": "--per-family", "families": "--families", "seed": "--seed", "family_field": "--family-field",
    "id_field": "--id-field", "system_prompt": "--system-prompt", "observation_template": "--observation-template",
    "observation_field": "--observation-field", "observation_budget": "--observation-budget",
    "prompt_budget": "--prompt-budget", "hidden_fields": "--hidden-fields", "action_field": "--action-field",
    "action_fields": "--action-fields",
    "reset_kwargs": "--reset-kwargs", "max_concurrency": "--max-concurrency",
    "max_steps": "--max-steps", "max_invalid_actions": "--max-invalid-actions", "reward_mode": "--reward-mode",
    "reward_clip": "--reward-clip", "invalid_flags": "--invalid-flags", "invalid_flags_in_state": "--invalid-flags-in-state",
    "invalid_errors": "--no-invalid-errors",
    "success_threshold": "--success-threshold", "timeout": "--timeout", "check_reset": "--no-reset-check",
}


def setting_names(own: dict[str, str] | None) -> dict[str, str]:
    """The caller's names for the fields it names, the eval's flags for the rest."""
    return {**CONFIG_FLAGS, **(own or {})}
