"""`openenv-prime prime-rl validate CONFIG.toml`: check the openenv_prime sampler settings of a
prime-rl TOML offline (prime-rl itself validates custom sampler kwargs only at orchestrator start)."""

from __future__ import annotations

import argparse
from pathlib import Path

from openenv_prime.cli_support import ExampleFormatter

# No repository path here (patches/, configs/): an installed package has neither, so the help points at the docs.
PRIME_RL_ABOUT = """\
prime-rl is a TOML integration, not a command that trains: prime-rl, with the openenv-prime patch applied (it adds
custom curriculum samplers; the patch ships in the openenv-prime repository, not in this installed package), loads
openenv_prime.prime_rl_adapter.OpenEnvPrimeSampler from the sampler section of its own TOML. docs/prime-rl.md in the
openenv-prime repository says how to apply the patch and which TOML keys select the sampler.

examples:
  openenv-prime prime-rl validate my-run.toml     # check the sampler kwargs offline, before `rl @ my-run.toml`
"""


def _validate(args: argparse.Namespace) -> int:
    from openenv_prime.prime_rl_adapter.validate import check_file

    failed = False
    for path in args.configs:
        checks = check_file(Path(path))
        if not checks:
            print(f"{path}: no train source uses openenv_prime.prime_rl_adapter.OpenEnvPrimeSampler")
            failed = True
        for check in checks:
            if check.problems:
                failed = True
                for problem in check.problems:
                    print(f"{path}: source {check.name!r}: {problem}")
            else:
                print(f"{path}: source {check.name!r}: ok ({check.summary})")
    return 1 if failed else 0


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "prime-rl",
        help="prime-rl integration helpers (prime-rl itself is configured in its TOML)",
        description="Helpers for training with prime-rl.",
        epilog=PRIME_RL_ABOUT,
        formatter_class=ExampleFormatter,
    )
    sub = parser.add_subparsers(dest="prime_rl_command", required=True, metavar="COMMAND")
    validate = sub.add_parser(
        "validate",
        help="check a prime-rl TOML's openenv_prime sampler kwargs without prime-rl",
        description="Validate the kwargs of every train source whose curriculum sampler is "
        "openenv_prime.prime_rl_adapter.OpenEnvPrimeSampler; exit 1 on any problem.",
        epilog=PRIME_RL_ABOUT,
        formatter_class=ExampleFormatter,
    )
    validate.add_argument("configs", nargs="+", metavar="CONFIG.toml", help="prime-rl TOML configs (`rl @ CONFIG.toml`)")
    validate.set_defaults(func=_validate)
