"""`openenv-prime export RUN_DIR --out DIR`: fuse a run's LoRA/DoRA adapters into its base model and
write a standalone mlx_lm model directory, which `mlx_lm.generate`, `mlx_lm.server` and
`mlx_lm.load` open like any other (no adapter files, no openenv-prime needed).

The base model is loaded exactly as the run loaded it (its `config.toml`: path and quantization), the
adapters come from the run's latest checkpoint (or `--checkpoint`), and the directory is built beside
`--out` and renamed into place, so an interrupted export never leaves half a model.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path

_WEIGHTS = ("*.safetensors", "*.safetensors.index.json", "config.json", "*.gguf", "README.md")


def export_run(run_dir: Path, out: Path, checkpoint: Path | None = None) -> Path:
    """Write the fused model of ``run_dir`` to ``out`` (which must not exist or be empty); returns ``out``."""
    import mlx.core as mx
    from mlx.utils import tree_unflatten
    from mlx_lm.utils import save_config, save_model

    from openenv_prime.mlx_trainer.config import load_config
    from openenv_prime.mlx_trainer.model.sources import atomic_dir, load_base, quantization_of, resolve_model
    from openenv_prime.mlx_trainer.training.checkpoint import latest_checkpoint
    from openenv_prime.mlx_trainer.training.lora import apply_lora, load_adapters, lora_modules

    run_dir, out = Path(run_dir), Path(out)
    if not (run_dir / "config.toml").is_file():
        raise FileNotFoundError(f"{run_dir} has no config.toml; pass a run directory written by `openenv-prime train`")
    checkpoint = Path(checkpoint) if checkpoint is not None else latest_checkpoint(run_dir)
    if checkpoint is None or not (checkpoint / "adapters.safetensors").is_file():
        raise FileNotFoundError(f"{run_dir} has no checkpoint with adapters.safetensors; train at least one step first")
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise FileExistsError(f"--out {out} exists and is not an empty directory; pass a new path")
    config = load_config(run_dir / "config.toml")
    source = resolve_model(config.model.path)
    model, tokenizer = load_base(config.model.path, config.model.quantize_bits, config.model.quantize_group_size)
    apply_lora(model, config.lora)
    load_adapters(model, checkpoint / "adapters.safetensors")
    wrapped = {id(m) for m in lora_modules(model)}
    fused = [(name, m.fuse(dequantize=False)) for name, m in model.named_modules() if id(m) in wrapped]
    model.update_modules(tree_unflatten(fused))
    mx.eval(model.parameters())

    source_dir = Path(source) if Path(source).is_dir() else None
    if source_dir is not None:
        model_config = json.loads((source_dir / "config.json").read_text())
    else:
        from mlx_lm.utils import hf_repo_to_path

        source_dir = hf_repo_to_path(str(source))
        model_config = json.loads((source_dir / "config.json").read_text())
    quantization = quantization_of(model)
    if quantization and "quantization" not in model_config:
        model_config["quantization"] = quantization
    with atomic_dir(out) as tmp:
        save_model(tmp, model, donate_model=False)
        save_config(model_config, config_path=tmp / "config.json")
        for f in sorted(source_dir.iterdir()):  # tokenizer and chat template files, as the base model has them
            if f.is_file() and not any(f.match(p) for p in _WEIGHTS):
                shutil.copy2(f, tmp / f.name)
        (tmp / "openenv_prime_export.json").write_text(json.dumps(
            {"run": str(run_dir.resolve()), "checkpoint": checkpoint.name, "base_model": str(source)}, indent=2) + "\n")
    return out


EXPORT_EXAMPLES = """\
examples:
  openenv-prime export runs/my-run --out models/my-run
  openenv-prime export runs/my-run --out models/my-run-step8 --checkpoint runs/my-run/checkpoints/step_000008

The MLX trainer and its runs: docs/mlx.md in the openenv-prime repository.
"""


def register(subparsers: argparse._SubParsersAction) -> None:
    from openenv_prime.cli_support import ExampleFormatter

    p = subparsers.add_parser(
        "export",
        help="(MLX) fuse a `train` run's adapters into a standalone mlx_lm model directory",
        description="(MLX) Fuse the LoRA/DoRA adapters of RUN_DIR's latest checkpoint (an `openenv-prime train` run of "
        "the MLX trainer) into the base model it trained and write an mlx_lm model directory that "
        "`mlx_lm.generate --model DIR` and `mlx_lm.server --model DIR` load.",
        epilog=EXPORT_EXAMPLES,
        formatter_class=ExampleFormatter,
    )
    p.add_argument("run_dir", type=Path, metavar="RUN_DIR", help="run directory written by `openenv-prime train`")
    p.add_argument("--out", type=Path, required=True, help="new directory for the fused model")
    p.add_argument("--checkpoint", type=Path, help="a checkpoint folder (default: RUN_DIR's latest)")
    p.set_defaults(func=_export)


def _export(args: argparse.Namespace) -> int:
    from openenv_prime.mlx_trainer.config import ConfigError

    try:
        out = export_run(args.run_dir, args.out, args.checkpoint)
    except (ConfigError, FileNotFoundError, FileExistsError, ValueError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    print(f"fused model written to {out}; try: mlx_lm.generate --model {out} --prompt 'hello'")
    return 0
