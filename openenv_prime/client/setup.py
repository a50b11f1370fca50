"""What every consumer asks a server before its first episode, in one place: where the tasks come from, the
action schema (from the task source's own client when it has one), the protocol built from it, and whether the
server's reset plays the task it is asked for. `openenv-prime eval`, the verifiers taskset and the trainer set up
through :class:`EnvironmentSetup`, so their task lists, splits and checks cannot drift apart::

    with EnvironmentSetup(base_url, tasks=None, env_name=None, timeout=10.0) as setup:
        split = setup.choose_split(None, setting="--split")       # the one asked for, or the test split by rule
        family = setup.family_field(split.name, "auto")           # the user's, the server's declared, or found
        tasks = setup.sampler_tasks(split.name, family_field=family.name, family_setting="--family-field")
        protocol = setup.protocol(PromptSettings(), action_setting="--action-field")  # or any config that carries them
        note = setup.check_reset_sync(split.name, len(tasks), setting="--no-reset-check")   # None, or a warning to show

Every consumer runs that sequence through one call, :meth:`EnvironmentSetup.prepare`, on its config's
:class:`~openenv_prime.client.server_settings.ServerSettings` and with its own spelling of the settings
(:class:`~openenv_prime.client.server_settings.Spelling`), so the split checked is the split chosen and the errors
read alike everywhere.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any, Callable

from openenv_prime.client.prompts import own_system
from openenv_prime.client.prompts.prompting import PromptSettings
from openenv_prime.client.prompts.render import EpisodeProtocol
from openenv_prime.client.server_settings import ServerSettings, Spelling
from openenv_prime.client.tasks.families import FamilyField
from openenv_prime.client.tasks.resetcheck import check_reset_plays_tasks, check_reset_plays_tasks_sync
from openenv_prime.client.tasks.splits import ChosenSplit, choose_split
from openenv_prime.client.tasks.tasklist import TaskList
from openenv_prime.client.tasks.tasks import TaskAPISource, TaskSource, family_field_for, load_sampler_tasks, open_task_source
from openenv_prime.client.wire.errors import RouteNotSupportedError
from openenv_prime.client.wire.taskapi import TaskAPIClient
from openenv_prime.samplers.task import Task

_UNSET: Any = object()


@dataclass(frozen=True)
class Prepared:
    """What :meth:`EnvironmentSetup.prepare` found: the split played and the family field, the tasks (all of the split,
    or those ``choose`` kept) with each one's reset arguments by index, the protocol, how the split and the family
    field were chosen when the caller left them open (``choices``) and what the reset check noticed (``warnings``)."""

    env_name: str
    split: str
    family_field: str | None
    tasks: list[Task]
    resets: dict[int, dict[str, Any]]
    protocol: EpisodeProtocol
    choices: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    @property
    def notes(self) -> list[str]:
        return [*self.choices, *self.warnings]


class EnvironmentSetup:
    """A task source (the server's Task API, or a task list for a server without one) and the server's action schema."""

    def __init__(self, base_url: str, *, tasks: str | os.PathLike[str] | TaskList | None = None, env_name: str | None = None,
                 timeout: float = 10.0, page_size: int = 1024):
        self.base_url = base_url
        self.timeout = timeout
        self.source: TaskSource = open_task_source(base_url, tasks=tasks, env_name=env_name, timeout=timeout, page_size=page_size)
        self._schema: tuple[dict[str, Any] | None, dict[str, Any] | None] = _UNSET

    @classmethod
    def of(cls, settings: ServerSettings, *, page_size: int = 1024) -> "EnvironmentSetup":
        """The setup of a consumer's config: its server, task list, environment name and timeout."""
        return cls(settings.base_url, tasks=settings.tasks, env_name=settings.env_name, timeout=settings.timeout,
                   page_size=page_size)

    @property
    def env_name(self) -> str:
        return self.source.env_name

    def splits(self) -> list[str]:
        return self.source.splits()

    def choose_split(self, wanted: str | None, *, setting: str) -> ChosenSplit:
        """``wanted`` checked against the listed splits, or the test split by rule (see :mod:`~openenv_prime.client.tasks.splits`);
        ``setting`` is how the user sets it, named in the error and the note."""
        return choose_split(self.source, wanted, setting=setting)

    def family_field(self, split: str, setting: str | None) -> FamilyField:
        """The field that names ``split``'s families: ``setting`` unless it is ``"auto"``, else what the server declares
        or the specs have (see :mod:`~openenv_prime.client.tasks.families`)."""
        return family_field_for(self.source, split, setting)

    def sampler_tasks(self, split: str, *, family_field: str | None, family_setting: str, no_family: str = "none") -> list[Task]:
        """Every task of ``split`` as the samplers take them (see :func:`~openenv_prime.client.tasks.tasks.load_sampler_tasks`)."""
        return load_sampler_tasks(self.source, split, family_field=family_field, family_setting=family_setting,
                                  no_family=no_family)

    def reset_kwargs(self, split: str, index: int) -> dict[str, Any]:
        """The reset arguments that play task ``index`` of ``split``."""
        return self.source.reset_kwargs(split, index)

    def action_schema(self) -> dict[str, Any] | None:
        """The JSON schema of the environment's action (None when the server has no ``/schema``), asked once."""
        return self._schemas()[0]

    def observation_schema(self) -> dict[str, Any] | None:
        """The JSON schema of the environment's observation (None when the server has no ``/schema``), asked once."""
        return self._schemas()[1]

    def _schemas(self) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
        if self._schema is _UNSET:
            if isinstance(self.source, TaskAPISource):
                self._schema = (self.source.api.action_schema(), self.source.api.observation_schema())
            else:
                with TaskAPIClient(self.base_url, env_name=self.env_name, timeout=self.timeout) as api:
                    self._schema = (api.action_schema(), api.observation_schema())
        return self._schema

    def protocol(self, settings: PromptSettings, *, action_setting: str, card_setting: str = "action_card") -> EpisodeProtocol:
        """How replies become actions and observations text, by ``settings`` (eval's, the taskset's or the trainer's
        config); a server without an action schema needs ``settings.action_field`` or an action card, and a card that
        does not fit the server's schema is a ValueError naming ``card_setting``."""
        schema = self.action_schema()
        if schema is None and settings.action_field is None and settings.action_card is None:
            raise ValueError(
                f"the server at {self.base_url} publishes no action schema, so the reply's action field is unknown; "
                f"set {action_setting} to the field that takes the reply"
            )
        try:
            return EpisodeProtocol(schema, settings=settings, declared_system=self.declared_system(),
                                   observation_schema=self.observation_schema())
        except ValueError as exc:
            if settings.action_card is None:
                raise
            raise ValueError(f"{card_setting}: {exc}") from None

    def declared_system(self) -> dict[str, str]:
        """The system texts the server's ``/splits`` entries declare, by split (none from a task list, or a server
        without ``/splits``)."""
        try:
            names = self.source.splits()
        except RouteNotSupportedError:
            return {}
        return own_system.declared([entry for name in names if (entry := self.source.split_entry(name)) is not None])

    async def check_reset(self, split: str, num_tasks: int, *, setting: str, extra: dict[str, Any] | None = None,
                          timeout: float = 30.0) -> str | None:
        """Raise when the server plays other tasks than asked; a warning text when it may (see
        :mod:`~openenv_prime.client.tasks.resetcheck`); ``setting`` is how the user turns the check off, named in both."""
        return await check_reset_plays_tasks(self.base_url, self.source, split, num_tasks, extra=extra, timeout=timeout,
                                             skip_setting=setting)

    def check_reset_sync(self, split: str, num_tasks: int, *, setting: str, extra: dict[str, Any] | None = None,
                         timeout: float = 30.0) -> str | None:
        """:meth:`check_reset` from synchronous code."""
        return check_reset_plays_tasks_sync(self.base_url, self.source, split, num_tasks, extra=extra, timeout=timeout,
                                            skip_setting=setting)

    def prepare(self, split: str | None, settings: Any, spelling: Spelling, *,
                choose: Callable[[list[Task]], list[Task]] | None = None, check_reset: bool | None = None) -> Prepared:
        """The one setup sequence: the split (``split``, or the test split by rule), its family field
        (``settings.family_field``), its tasks (those ``choose`` keeps, when given), their reset arguments, the reset
        check on the split chosen (``settings.check_reset`` unless ``check_reset`` says otherwise, with
        ``settings.reset_kwargs``), and the protocol. ``settings`` is a config that carries the server, prompt and reset
        settings; ``spelling`` how its user writes them (``spelling("split")`` is the split's setting). A split
        without tasks is a ValueError naming the split's setting."""
        chosen = self.choose_split(split, setting=spelling("split"))
        family = self.family_field(chosen.name, settings.family_field)
        choices = [note for note in (chosen.note, family.note(spelling("family_field"))) if note]
        everything = self.sampler_tasks(chosen.name, family_field=family.name, family_setting=spelling("family_field"),
                                        no_family=spelling.none)
        protocol = self.protocol(settings, action_setting=spelling("action_field"), card_setting=spelling("action_card"))
        tasks = choose(everything) if choose is not None else everything
        if not tasks:
            source = self.source
            raise ValueError(f"{spelling('split')}: split {chosen.name!r} of {source.env_name!r} ({source.kind} "
                             f"{source.where}) has no tasks; choose another split")
        warnings = []
        if settings.check_reset if check_reset is None else check_reset:
            note = self.check_reset_sync(chosen.name, len(everything), setting=spelling("check_reset"),
                                         extra=settings.reset_kwargs, timeout=settings.timeout)
            warnings = [note] if note is not None else []
        resets = {task.index: self.reset_kwargs(task.split, task.index) for task in tasks}
        return Prepared(self.env_name, chosen.name, family.name, tasks, resets, protocol, choices, warnings)

    def close(self) -> None:
        self.source.close()

    def __enter__(self) -> "EnvironmentSetup":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
