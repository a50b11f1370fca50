"""`openenv-prime`: one command, one subcommand per part. Each part registers its own subparser and
imports its heavy dependencies only when its subcommand runs, so `--help` is instant."""

from __future__ import annotations

import argparse
import importlib
import sys

# Each module has `register(subparsers)`, adding subcommands whose `func(args) -> int` does the work. A subcommand
# may also set `prepare_process()`, run first when `main` parses this process's own command line (never for an
# in-process call with `argv`): the trainer re-executes itself there with a faster BLAS.
_PARTS = (
    "openenv_prime.envs.cli",
    "openenv_prime.evaluation.cli",
    "openenv_prime.mlx_trainer.cli",
    "openenv_prime.prime_rl_adapter.cli",
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="openenv-prime",
        description="Task sampling for GRPO post-training on OpenEnv environments.",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in _PARTS:
        importlib.import_module(name).register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if argv is None and getattr(args, "prepare_process", None) is not None:
        args.prepare_process()
    return int(args.func(args) or 0)


if __name__ == "__main__":
    sys.exit(main())
