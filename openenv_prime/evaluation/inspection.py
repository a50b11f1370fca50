"""`openenv-prime inspect`: the action format the package reads from a served environment, shown before any episode.

The format is guessed from a JSON schema written for programs; where the guess is wrong the model cannot find out,
so the user must see it: the fields offered, those held as settings with the values the server fills in, the legal
values, an example reply and the reply format the model is shown. ``--write-card`` writes it as an action card
(:mod:`~openenv_prime.client.prompts.card`) to edit and give to eval (``--action-card``), the taskset, the trainers.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from openenv_prime.cli_support import ExampleFormatter

INSPECT_EXAMPLES = """\
examples:
  openenv-prime inspect --base-url http://127.0.0.1:8000
  openenv-prime inspect --base-url http://127.0.0.1:8000 --write-card card.json   # edit it, then:
  openenv-prime inspect --base-url http://127.0.0.1:8000 --action-card card.json
  openenv-prime eval --base-url http://127.0.0.1:8000 --tasks tasks.jsonl --action-card card.json --model M --model-base-url http://127.0.0.1:8080/v1

Action cards and what the model is told: docs/openenv.md in the openenv-prime repository.
"""


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "inspect",
        help="print the action format read from a served environment (fields, settings, legal values, an example)",
        description="Reads the environment's action schema (GET /schema) and prints what the model will be offered: "
        "the fields it fills, the fields held as settings and the values the server fills in, the legal values, an "
        "example reply and the reply format of the system prompt. --write-card writes that format as an action card "
        "to edit; --action-card shows what a card makes of it (and checks it against the schema).",
        epilog=INSPECT_EXAMPLES,
        formatter_class=ExampleFormatter,
    )
    p.add_argument("--base-url", default="http://127.0.0.1:8000", help="URL of the OpenEnv server (default: %(default)s)")
    p.add_argument("--env-name", default=None, help="environment name (default: the only one the server lists)")
    p.add_argument("--tasks", default=None, metavar="FILE.jsonl",
                   help="the task list a server without the Task API is played with (only its environment name is read)")
    p.add_argument("--action-card", default=None, metavar="FILE", help="an action card to show in place of the "
                   "inferred format (TOML or JSON)")
    p.add_argument("--action-field", default=None, metavar="NAME", help="as eval's --action-field")
    p.add_argument("--action-fields", nargs="+", default=[], metavar="NAME", help="as eval's --action-fields")
    p.add_argument("--write-card", default=None, type=Path, metavar="FILE.json",
                   help="write the format shown as an action card (JSON) to FILE.json")
    p.add_argument("--timeout", type=float, default=30.0, help="seconds per server answer (default: %(default)s)")
    p.set_defaults(func=_inspect)


def _inspect(args: argparse.Namespace) -> int:
    from pydantic import ValidationError

    from openenv_prime.client.prompts.prompting import PromptSettings
    from openenv_prime.client.setup import EnvironmentSetup
    from openenv_prime.client.wire.errors import OpenEnvError

    try:
        settings = PromptSettings(action_card=args.action_card, action_field=args.action_field,
                                  action_fields=args.action_fields)
    except ValidationError as exc:
        print(f"error: {'; '.join(e['msg'].removeprefix('Value error, ') for e in exc.errors())}", file=sys.stderr)
        return 2
    try:
        with EnvironmentSetup(args.base_url, tasks=args.tasks, env_name=args.env_name, timeout=args.timeout) as setup:
            protocol = setup.protocol(settings, action_setting="--action-field", card_setting="--action-card")
            name = setup.env_name
    except (OpenEnvError, ValueError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(describe(protocol, name, args.base_url))
    if args.write_card is not None:
        if protocol.action_format is None:
            print("error: --write-card: an MCP environment's tools are its format; it takes no action card", file=sys.stderr)
            return 2
        args.write_card.write_text(protocol.action_format.as_card().to_json(), encoding="utf-8")
        print(f"\nwrote the action card {args.write_card} (give it back with --action-card / action_card)")
    return 0


def describe(protocol, env_name: str, base_url: str) -> str:
    """The report `inspect` prints for one environment's :class:`~openenv_prime.client.prompts.render.EpisodeProtocol`."""
    lines = [f"environment {env_name!r} at {base_url}"]
    form = protocol.action_format
    if form is None:
        lines += ["actions: MCP tool calls (the tools are listed at reset, each with its input schema)", "",
                  "reply format shown to the model:", protocol.reply_format()]
        return "\n".join(lines)
    source = "the action card" if form.card is not None else "inferred from the action schema"
    lines.append(f"action format: {source}")
    lines.append("fields offered to the model:")
    card = form.as_card()
    for name, field in card.fields.items():
        legal = ", ".join(json.dumps(v) for v in field.values) if field.values else "any the schema takes (none stated)"
        said = f": {field.description}" if field.description else ""
        lines.append(f"  {name} ({form.describe_field(name, form.fields[name])}); legal values: {legal}{said}")
    if form.constants:
        lines.append("filled in for the model: " + ", ".join(f"{k} = {json.dumps(v)}" for k, v in form.constants.items()))
    defaults = form.settings_defaults()
    lines.append("held as settings (the server's default): "
                 + (", ".join(f"{k} = {json.dumps(v)}" for k, v in defaults.items()) if defaults else "none"))
    if form.field is not None:
        lines.append(f"a bare reply fills: {form.field}" + (" (any text, sent as written)" if form.free_text else ""))
    else:
        lines.append("a reply is: a JSON object of the fields offered")
    lines.append(f"example reply: {json.dumps(card.example)}")
    lines += ["", "reply format shown to the model:", protocol.reply_format() or "(nothing: any reply text is the action)"]
    return "\n".join(lines)
