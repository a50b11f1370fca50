"""`openenv-prime train`: GRPO + LoRA with MLX on an OpenEnv environment (`openenv-prime plot` draws its evals;
`openenv-prime export` fuses its adapters)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from openenv_prime.cli_support import ExampleFormatter

# Real invocations (tests/test_cli_help.py parses every `openenv-prime ...` line).
TRAIN_EXAMPLES = """\
examples:
  openenv-prime train --out runs/my-run               # the embedded default, offline
  openenv-prime train --print-config > my-run.toml    # the default config, every key with its comment, to edit
  openenv-prime train my-run.toml --out runs/my-run
  openenv-prime train --resume --out runs/my-run --steps 32   # continue, or extend a finished run
  openenv-prime plot runs/my-run                      # its evals per family, as a PNG
  openenv-prime export runs/my-run --out models/my-run

The trainer, its config keys and measured runs: docs/mlx.md in the openenv-prime repository.
"""


class _PrintConfig(argparse.Action):
    """`--print-config`: the embedded default TOML (package data, so an installed package has it) to stdout, then exit."""

    def __init__(self, option_strings, dest, **kwargs):
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kwargs)

    def __call__(self, parser, namespace, values, option_string=None):
        from openenv_prime.mlx_trainer.config import default_config_text

        sys.stdout.write(default_config_text())
        sys.stdout.flush()
        parser.exit()


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "train",
        help="(MLX) GRPO + LoRA training; with no CONFIG, the offline default (SmolLM2-135M on reasoning-gym "
        "arithmetic)",
        description="(MLX) Train LoRA adapters by GRPO with the MLX trainer (mlx-lm) on an OpenEnv environment, "
        "choosing tasks with a sampler. Writes RUN_DIR/run.json, config.toml, log.jsonl, checkpoints/ and plots/, into "
        "a new or empty RUN_DIR or one of its own runs only. Ctrl-C saves a checkpoint of the last completed step and "
        "stops; --resume continues.",
        epilog=TRAIN_EXAMPLES,
        formatter_class=ExampleFormatter,
    )
    p.add_argument("config", nargs="?", type=Path,
                   help="TOML config; `openenv-prime train --print-config` prints the default with every key, to start "
                   "one from (omitted: that embedded default)")
    p.add_argument("--print-config", action=_PrintConfig,
                   help="print the embedded default config (TOML) to stdout and exit")
    p.add_argument("--resume", action="store_true", help="continue the run in RUN_DIR from its latest checkpoint (with RUN_DIR/config.toml unless CONFIG is given)")
    p.add_argument("--allow-config-change", action="store_true",
                   help="with --resume and a CONFIG that differs from RUN_DIR/config.toml: continue with the new settings "
                   "(without it, the differences are listed and the run refuses to start)")
    p.add_argument("--steps", type=int, help="override the number of training steps (e.g. to extend a finished run)")
    p.add_argument("--out", type=Path, help="run directory (default: the config's `out`)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar (logs still go to RUN_DIR/log.jsonl)")
    p.set_defaults(func=_train, prepare_process=_use_openblas)
    from openenv_prime.mlx_trainer.export import register as register_export

    register_export(subparsers)


def _train(args: argparse.Namespace) -> int:
    from openenv_prime.envs.launch import ServerStartError
    from openenv_prime.mlx_trainer.config import ConfigError, config_from_dict, load_config
    from openenv_prime.mlx_trainer.training.loop import TrainingError, TrainingInterrupted, train

    try:
        config = load_config(args.config)
        run_dir = args.out or Path(config.out)
        if args.resume and args.config is None and (run_dir / "config.toml").is_file():
            config = load_config(run_dir / "config.toml")
        if args.steps is not None:
            config = config_from_dict({**config.model_dump(), "steps": args.steps}, "(--steps)")
    except ConfigError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    _print_blas_hint()
    try:
        result = train(config, run_dir, resume=args.resume, allow_config_change=args.allow_config_change,
                       progress=not args.no_progress)
    except TrainingInterrupted as err:
        print(f"stopped: {err}", file=sys.stderr)
        return 130
    except KeyboardInterrupt:
        print(f"stopped at once by a second interrupt, without a final checkpoint; `openenv-prime train --resume "
              f"--out {run_dir}` continues from the latest one", file=sys.stderr)
        return 130
    except (TrainingError, ValueError, FileNotFoundError, ServerStartError) as err:  # setup errors name the key, path or server
        print(f"error: {err}", file=sys.stderr)
        return 1
    s = result.state
    if result.already_finished:
        print(f"{run_dir} already finished at step {s.step} of {config.steps}; nothing to do "
              f"(pass --steps N with N > {s.step} to train further)")
        return 0
    last = s.evals[-1] if s.evals else None
    acc = f", eval accuracy {last['overall']:.3f}" if last else ""
    print(f"done: {s.step} steps, {s.episodes} episodes, {s.tokens} generated tokens{acc}; run in {run_dir}")
    _print_summary(run_dir)
    return 0


def _print_summary(run_dir: Path) -> None:
    from openenv_prime.mlx_trainer.report import summarize

    try:
        print(summarize(run_dir))
    except (FileNotFoundError, ValueError):
        return
    plots = sorted((run_dir / "plots").glob("*.png"))
    if plots:
        print("plots: " + ", ".join(str(p) for p in plots))


def _use_openblas() -> None:
    """Before anything else: re-execute this command with OpenBLAS preloaded where it is installed (see model/blas.py)."""
    from openenv_prime.mlx_trainer.model.blas import reexec_with_openblas

    reexec_with_openblas()


def _print_blas_hint() -> None:
    from openenv_prime.mlx_trainer.model.blas import preloaded_by_reexec, warn_if_slow

    info = warn_if_slow(lambda text: print(text, file=sys.stderr), "openenv-prime train " + " ".join(sys.argv[2:]))
    if not info.slow and preloaded_by_reexec():
        print(f"note: {info.message().rstrip('.')}: the command restarted itself with LD_PRELOAD={preloaded_by_reexec()}",
              file=sys.stderr)
