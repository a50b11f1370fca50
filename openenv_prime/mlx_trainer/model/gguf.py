"""Convert a llama-architecture GGUF (as llama.cpp writes it) into an mlx_lm model directory, with
no `gguf`, `llama-cpp-python` or torch: MLX reads GGUF itself, including Q4_0/Q4_1/Q8_0 blocks,
which it maps onto its own affine quantization (weight + scales + biases, group size 32)."""

from __future__ import annotations

import json
import re
from pathlib import Path

from .tokenizer_files import save_tokenizer

GROUP_SIZE = 32
_BLOCK_NAMES = {
    "attn_q": "self_attn.q_proj",
    "attn_k": "self_attn.k_proj",
    "attn_v": "self_attn.v_proj",
    "attn_output": "self_attn.o_proj",
    "ffn_gate": "mlp.gate_proj",
    "ffn_up": "mlp.up_proj",
    "ffn_down": "mlp.down_proj",
    "attn_norm": "input_layernorm",
    "ffn_norm": "post_attention_layernorm",
}
_TOP_NAMES = {"token_embd": "model.embed_tokens", "output_norm": "model.norm", "output": "lm_head"}


def convert_gguf(gguf: Path, out: Path, *, dequantize: bool = True) -> None:
    """Write config.json, model.safetensors and the tokenizer files for `gguf` into `out`."""
    import mlx.core as mx

    try:
        tensors, meta = mx.load(str(gguf), return_metadata=True)
    except (RuntimeError, ValueError) as err:
        raise ValueError(f"{gguf}: not a readable GGUF file ({err}); reinstall the package that ships it") from err
    arch = meta.get("general.architecture")
    if arch != "llama":
        raise ValueError(f"{gguf}: architecture {arch!r} is not supported; only llama GGUF files convert")
    config = _config(meta)
    weights = {_mlx_name(name): t for name, t in tensors.items()}
    if "lm_head.weight" in weights:
        config["tie_word_embeddings"] = False
    if dequantize:
        weights = _dequantized(weights)
    elif any(k.endswith(".scales") for k in weights):
        # mlx_lm infers each layer's bit width from its shapes (the embedding is 8-bit, blocks 4-bit).
        config["quantization"] = {"group_size": GROUP_SIZE, "bits": 4}
    mx.save_safetensors(str(out / "model.safetensors"), weights, metadata={"format": "mlx"})
    (out / "config.json").write_text(json.dumps(config, indent=2))
    save_tokenizer(_tokenizer(meta), out)


def _scalar(meta: dict, key: str):
    return meta[key].item()


def _config(meta: dict) -> dict:
    heads = _scalar(meta, "llama.attention.head_count")
    hidden = _scalar(meta, "llama.embedding_length")
    return {
        "model_type": "llama",
        "hidden_size": hidden,
        "num_hidden_layers": _scalar(meta, "llama.block_count"),
        "intermediate_size": _scalar(meta, "llama.feed_forward_length"),
        "num_attention_heads": heads,
        "num_key_value_heads": _scalar(meta, "llama.attention.head_count_kv"),
        "head_dim": hidden // heads,
        "rms_norm_eps": float(_scalar(meta, "llama.attention.layer_norm_rms_epsilon")),
        "vocab_size": len(meta["tokenizer.ggml.tokens"]),
        "max_position_embeddings": _scalar(meta, "llama.context_length"),
        "rope_theta": float(_scalar(meta, "llama.rope.freq_base")),
        # llama.cpp permutes q/k for interleaved RoPE, so the stored weights want traditional RoPE.
        "rope_traditional": True,
        "tie_word_embeddings": True,
        "bos_token_id": _scalar(meta, "tokenizer.ggml.bos_token_id"),
        "eos_token_id": _scalar(meta, "tokenizer.ggml.eos_token_id"),
    }


def _mlx_name(name: str) -> str:
    m = re.fullmatch(r"blk\.(\d+)\.(\w+)\.(weight|scales|biases)", name)
    if m and m[2] in _BLOCK_NAMES:
        return f"model.layers.{m[1]}.{_BLOCK_NAMES[m[2]]}.{m[3]}"
    m = re.fullmatch(r"(\w+)\.(weight|scales|biases)", name)
    if m and m[1] in _TOP_NAMES:
        return f"{_TOP_NAMES[m[1]]}.{m[2]}"
    raise ValueError(f"GGUF tensor {name!r} has no mlx_lm counterpart; is this a llama model?")


def _dequantized(weights: dict) -> dict:
    import mlx.core as mx

    out = {}
    for name, w in weights.items():
        if name.endswith((".scales", ".biases")):
            continue
        if name.endswith(".weight") and w.dtype == mx.uint32:
            stem = name[: -len(".weight")]
            scales, biases = weights[f"{stem}.scales"], weights[f"{stem}.biases"]
            bits = w.shape[-1] * 32 // (scales.shape[-1] * GROUP_SIZE)
            w = mx.dequantize(w, scales, biases, group_size=GROUP_SIZE, bits=bits)
        out[name] = w.astype(mx.float32)
    return out


def _tokenizer(meta: dict):
    """A byte-level BPE tokenizer rebuilt from the GGUF vocabulary and merges. The `smollm`
    pre-tokenizer splits digits one by one before the GPT-2 regex, as the original tokenizer.json does."""
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    if meta.get("tokenizer.ggml.model") != "gpt2":
        raise ValueError(f"GGUF tokenizer {meta.get('tokenizer.ggml.model')!r} is not supported; only byte-level BPE (gpt2)")
    tokens = meta["tokenizer.ggml.tokens"]
    merges = [tuple(m.split(" ", 1)) for m in meta["tokenizer.ggml.merges"]]
    tok = Tokenizer(models.BPE(vocab={t: i for i, t in enumerate(tokens)}, merges=merges))
    byte_level = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    if meta.get("tokenizer.ggml.pre") == "smollm":
        tok.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.Digits(individual_digits=True), byte_level])
    else:
        tok.pre_tokenizer = byte_level
    tok.decoder = decoders.ByteLevel()
    types = meta["tokenizer.ggml.token_type"].tolist()
    tok.add_special_tokens([AddedToken(t, special=True, normalized=False) for t, kind in zip(tokens, types) if kind == 3])

    def token(key: str) -> str | None:
        return tokens[_scalar(meta, key)] if key in meta else None

    return PreTrainedTokenizerFast(
        tokenizer_object=tok,
        bos_token=token("tokenizer.ggml.bos_token_id"),
        eos_token=token("tokenizer.ggml.eos_token_id"),
        pad_token=token("tokenizer.ggml.padding_token_id"),
        unk_token=token("tokenizer.ggml.unknown_token_id"),
        chat_template=meta.get("tokenizer.chat_template"),
    )
