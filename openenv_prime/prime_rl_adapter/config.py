"""The adapter's kwargs, validated when prime-rl builds the sampler: prime-rl passes the TOML's
`kwargs` table through untyped, so this model is what makes a typo fail at orchestrator start."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

# Where these kwargs live in a prime-rl `rl` TOML; error messages point there.
KWARGS_PATH = "orchestrator.train.source.curriculum.sampler.kwargs"


class AdapterConfig(BaseModel):
    """`[orchestrator.train.source.curriculum.sampler.kwargs]` of a `type = "custom"` sampler."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    sampler: str = "curriculum"
    """Which openenv_prime sampler decides: "sequential", "uniform" or "curriculum"."""
    sampler_kwargs: dict[str, Any] = Field(default_factory=dict)
    """Passed to the sampler (e.g. `group_size`, `gamma`, `epsilon`, `seed` for the curriculum)."""
    family_field: str | None = "family"
    """Dotted path into the task data naming its family (e.g. `family`, `spec.tier`);
    "" or None makes every task its own family (its `Task.key`)."""
    success_threshold: float | None = Field(None, allow_inf_nan=False)
    """Binarize rewards before `update` (reward >= threshold -> 1.0, else 0.0); None keeps them."""
    cost: Literal["total_tokens", "output_tokens", "spend"] = "output_tokens"
    """A rollout's cost: the completion tokens of all its model calls (the cost of OpenEnv RFC 013, the generated ids),
    prompt + completion tokens ("total_tokens", what the inference server processed), or what the environment reported
    the episode cost it ("spend": its steps' `metadata["service_spend"]`, summed; a group is costless when a rewarded
    trace has none). The sampler reports cost; it never weights by it."""
    refill: int = Field(1, ge=1)
    """Tasks drawn from the inner sampler at once; 1 keeps every draw on the freshest estimates."""
    metrics_families: Annotated[int, Field(ge=0)] | Literal["all"] = 8
    """Families reported one by one in the metrics: the N most drawn (0: totals only). "all"
    logs a series per family, which is one per task when `family_field` is ""."""
    pending_horizon: int = Field(4096, ge=1)
    """Later draws after which a drawn group never observed counts as lost (prime-rl drops stale
    and cancelled groups without telling the sampler); keeps `adapter/pending_groups` bounded."""
    worker_index: int | None = Field(None, ge=0)
    """This orchestrator's index when several share one config: worker i > 0 draws with a seed
    derived from (seed, i), so workers do not draw identically. None reads the environment
    variable OPENENV_PRIME_WORKER_INDEX (prime-rl exposes no worker index of its own), else 0."""

    @field_validator("family_field")
    @classmethod
    def _blank_means_task_key(cls, value: str | None) -> str | None:
        return value or None


def parse_kwargs(kwargs: dict[str, Any]) -> AdapterConfig:
    """Validate the TOML kwargs, or raise ValueError naming each bad field by its TOML path."""
    try:
        return AdapterConfig.model_validate(kwargs)
    except ValidationError as exc:
        problems = "; ".join(
            f"{KWARGS_PATH}.{'.'.join(str(part) for part in error['loc'])}: {error['msg']}"
            for error in exc.errors()
        )
        raise ValueError(f"invalid openenv_prime sampler kwargs: {problems}") from None
