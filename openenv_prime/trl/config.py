"""What a TRL run on an OpenEnv server needs from this package: the server, its tasks, the sampler, the prompts.

Every field has a working default (a local server's train split, the curriculum); unknown fields are errors. What
the model is shown is :class:`~openenv_prime.client.prompts.prompting.PromptSettings`, the same keys as in eval, the verifiers
taskset and the MLX trainer, so a TRL run and its evals see the prompts the other consumers would.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import ConfigDict, Field

from openenv_prime.client.engine.episode_settings import EpisodeSettings, ResetArguments
from openenv_prime.client.engine.spend import CostSource
from openenv_prime.client.prompts.prompting import PromptSettings
from openenv_prime.client.server_settings import ServerSettings, Spelling


class OpenEnvTRLConfig(ServerSettings, PromptSettings, EpisodeSettings, ResetArguments):
    """The environment and sampler side of a TRL GRPO run (TRL's own settings stay in its ``GRPOConfig``). The server
    (:class:`ServerSettings`), the episode rules (:class:`EpisodeSettings`) and the reset arguments are the same keys
    as in every consumer."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    reset_choices: ClassVar[str] = "choose the split with train_split and put per-task reset arguments in a task list (tasks)"
    spelling: ClassVar[Spelling] = Spelling("{name}", {"split": "train_split",
                                                       "check_reset": "OpenEnvTRLConfig(check_reset=False)"})
    """The config's own field names; `split` is the training split (the evals' is TRL_EVAL_SPELLING's)."""

    train_split: str = Field("train", description="The split the sampler draws training tasks from.")
    test_split: str | None = Field(None, description="The split evals run on; None is the first of test, eval, "
                                   "validation the server lists.")
    sampler: Literal["sequential", "uniform", "curriculum"] = Field("curriculum", description="Which task each group trains on.")
    sampler_kwargs: dict[str, Any] = Field(default_factory=dict, description="Settings of the sampler (e.g. decay).")
    group_size: int = Field(8, ge=2, description="Rollouts per task: must equal GRPOConfig.num_generations.")
    seed: int = Field(0, description="Seeds the sampler's draws.")
    cost: CostSource = Field("tokens", description="Each completion's cost in the sampler's updates: 'tokens', the "
                             "generated tokens; 'spend', what the environment reports in its steps' "
                             "metadata['service_spend'], summed over the episode (a group is costless when a scored "
                             "episode reported none; costs go with every group or with none).")
    system_prompt: str = Field("", description="Our base system prompt, sent where the environment brings no "
                               "instructions of its own (theirs win); the environment's reply format is added to it "
                               "(text mode), as the MLX trainer and the evals do. Empty: the reply format alone.")
    max_sessions: int = Field(64, ge=1, description="Concurrent /ws sessions the run opens to the server, all "
                              "processes together (each of N processes opens at most max_sessions // N): at most what "
                              "the server admits (openenv-prime serve's --max-sessions, 64 by default).")


TRL_EVAL_SPELLING = OpenEnvTRLConfig.spelling.but(split="test_split", per_family="attach(per_family=...)",
                                              max_concurrency="max_sessions")
"""How a TRL user sets the EvalConfig fields the callback's evals take from the run's config."""
