"""`openenv-prime`: one command, one subcommand per part. Each part registers its own subparser and
imports its heavy dependencies only when its subcommand runs, so `--help` is instant."""

from __future__ import annotations

import argparse
import importlib
import sys

from openenv_prime.cli_support import ExampleFormatter

# Each module has `register(subparsers)`, adding subcommands whose `func(args) -> int` does the work. A subcommand
# may also set `prepare_process()`, run first when `main` parses this process's own command line (never for an
# in-process call with `argv`): the trainer re-executes itself there with a faster BLAS.
_PARTS = (
    "openenv_prime.envs.cli",
    "openenv_prime.evaluation.cli",
    "openenv_prime.evaluation.inspection",
    "openenv_prime.mlx_trainer.cli",
    "openenv_prime.prime_rl_adapter.cli",
)


# The docs are in the repository (docs/*.md), not in the installed package.
EPILOG = """\
examples:
  openenv-prime serve chain-sum --port 8000 &     # an OpenEnv server with the Task API
  openenv-prime eval --base-url http://127.0.0.1:8000 --model M --model-base-url http://127.0.0.1:8080/v1
  openenv-prime train --out runs/my-run            # (MLX) the offline default run
  openenv-prime inspect --base-url http://127.0.0.1:8000   # the action format the model will be offered

`openenv-prime COMMAND --help` shows a command's flags and examples.

docs, by topic (docs/*.md in the openenv-prime repository on GitHub, beside its README):
  docs/openenv.md       serving environments (serve), task lists, the client, what the model is shown
  docs/verifiers.md     the vf-eval taskset, and every flag of `openenv-prime eval`
  docs/evaluation.md    in-training evaluation from any loop, eval logs and `openenv-prime plot`
  docs/mlx.md           the MLX trainer: `train`, `export`, every config key
  docs/trl.md           the TRL integration (openenv_prime.trl)
  docs/prime-rl.md      the prime-rl integration: its patch and TOML, `openenv-prime prime-rl validate`
  docs/samplers.md      the task samplers and the curriculum (openenv_prime.samplers)
  docs/architecture.md  how the package is laid out, and its tests

Training with TRL or prime-rl is not a subcommand. TRL is a library integration: your GRPOTrainer script
imports openenv_prime.trl. prime-rl is a TOML integration: prime-rl, with the openenv-prime patch applied (see
docs/prime-rl.md), loads openenv_prime.prime_rl_adapter.OpenEnvPrimeSampler from its own TOML; the `prime-rl`
subcommand only checks such a TOML offline (`openenv-prime prime-rl validate`).
"""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="openenv-prime",
        description="Task sampling for GRPO post-training on OpenEnv environments.",
        epilog=EPILOG,
        formatter_class=ExampleFormatter,
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
