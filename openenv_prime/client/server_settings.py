"""Which server and tasks a consumer plays, and how its user spells each setting: declared once for every consumer.

``EvalConfig``, ``OpenEnvTRLConfig``, the verifiers taskset's config and the MLX trainer's ``environment`` section
inherit :class:`ServerSettings` as they inherit ``PromptSettings`` and ``EpisodeSettings``: the same names, defaults,
checks and texts everywhere. The one difference is the MLX trainer's, stated where it is set: its ``base_url`` may
be empty (its default), meaning the server it starts itself (``embedded_server``). How many sessions a consumer opens
is its own setting, for its own reason: TRL's and the trainer's ``max_sessions`` (64: the embedded server's cap too),
the taskset's per process (None: verifiers bounds its rollouts), eval's ``max_concurrency`` (also the model's batch).

Messages name a setting as the consumer's user writes it (``--split`` on eval's command line,
``environment.train_split`` in the trainer's TOML): each config says so once, in its :class:`Spelling`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar, Mapping

from pydantic import BaseModel, Field, field_validator, model_validator

from openenv_prime.client.wire.urls import http_base

LOCAL_SERVER = "http://127.0.0.1:8000"
"""Where `openenv-prime serve` listens by default."""


@dataclass(frozen=True)
class Spelling:
    """How a consumer's user writes its settings: ``pattern`` for any field (``{name}``, or ``{kebab}`` for
    ``max_steps`` as ``max-steps``), the ``exceptions`` (a flag that turns a setting off, a split chosen under
    another name), and how they write None (``none``)."""

    pattern: str
    exceptions: Mapping[str, str] = field(default_factory=dict)
    none: str = "None"

    def __call__(self, name: str) -> str:
        """How the user sets field ``name``."""
        return self.exceptions.get(name) or self.pattern.format(name=name, kebab=name.replace("_", "-"))

    def but(self, **exceptions: str) -> "Spelling":
        """This spelling with more exceptions: e.g. a trainer's eval, whose ``split`` is the trainer's test split."""
        return Spelling(self.pattern, {**self.exceptions, **exceptions}, self.none)


class ServerSettings(BaseModel):
    """The server, where its tasks come from, how they group into families, and the checks before the first episode."""

    spelling: ClassVar[Spelling] = Spelling("{name}")
    """How the consumer's user writes each setting, for messages; each consumer's config sets its own."""
    embedded_server: ClassVar[bool] = False
    """True where an empty ``base_url`` means a server the consumer starts itself; empty is then the default."""

    base_url: str = Field(
        LOCAL_SERVER, description="OpenEnv server (http(s):// or ws(s)://). The MLX trainer's default is empty: it "
        "starts its embedded server (environment.embedded).")
    env_name: str | None = Field(None, description="Environment on the server; None = the only one it lists.")
    tasks: str | None = Field(
        None, description="Task list (JSONL, one task a line with its reset arguments) for a server without a Task "
        "API; its splits replace the server's, and each episode resets with its line's reset arguments.")
    family_field: str | None = Field(
        "auto", description="Task-spec field (a dotted path) whose value names the task's family (the curriculum's "
        "key, eval's rows); 'auto' takes the field the server declares for the split, else 'family' or 'tier' when "
        "the specs have it; None puts every task in one family, 'all'.")
    timeout: float = Field(30.0, gt=0, description="Seconds to wait for any one server answer (a Task API request "
                           "or a /ws reply).")
    check_reset: bool = Field(
        True, description="Before the first episode, reset tasks in fresh sessions (task 0 twice) and stop when the "
        "server plays other tasks than asked (openenv drops reset arguments the environment's reset() does not take); "
        "a warning when the environment itself is random (openenv_prime.client.tasks.resetcheck).")

    @model_validator(mode="before")
    @classmethod
    def _own_server_by_default(cls, data: Any) -> Any:
        if cls.embedded_server and isinstance(data, dict) and "base_url" not in data:
            return {**data, "base_url": ""}
        return data

    @field_validator("base_url")
    @classmethod
    def _server_url(cls, url: str) -> str:
        if url or not cls.embedded_server:
            http_base(url)  # raises naming the schemes it takes
        return url

    def server_fields(self) -> dict[str, Any]:
        """These settings as keyword arguments for another consumer's config (a trainer's eval)."""
        return {name: getattr(self, name) for name in ServerSettings.model_fields}
