"""GRPO mechanics on a real tiny mlx model: advantages, sampling with EOS kept, log-probs, LoRA-only updates."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from openenv_prime.mlx_trainer.training.grpo import group_advantages, make_batch


@given(st.lists(st.sampled_from([0.0, 0.25, 0.5, 1.0]), min_size=2, max_size=16))
@settings(max_examples=200, deadline=None)
def test_group_advantages_are_normalised_or_none(rewards):
    adv = group_advantages(rewards)
    if len(set(rewards)) == 1:
        assert adv is None
        return
    assert adv is not None and len(adv) == len(rewards)
    assert abs(sum(adv)) < 1e-9
    assert math.isclose(sum(a * a for a in adv) / len(adv), 1.0, rel_tol=1e-9)
    # order preserved: a higher reward never gets a lower advantage
    for (r1, a1), (r2, a2) in zip(zip(rewards, adv), zip(rewards[1:], adv[1:])):
        assert (r1 - r2) * (a1 - a2) >= 0


def test_make_batch_masks_exactly_the_completion_tokens():
    batch = make_batch([([5, 6, 7], [1, 2]), ([5], [9, 9, 9, 2])], [1.0, -1.0])
    assert batch.inputs.tolist() == [[5, 6, 7, 1], [5, 9, 9, 9]]
    assert batch.inputs.shape == batch.targets.shape == batch.mask.shape == (2, 4)
    assert batch.targets.tolist()[0] == [6, 7, 1, 2]
    assert batch.mask.tolist() == [[0, 0, 1, 1], [1, 1, 1, 1]]
    assert batch.num_tokens == 6
    with pytest.raises(ValueError, match="non-empty"):
        make_batch([([1], [])], [0.0])


@pytest.fixture(scope="module")
def tiny(tiny_model_dir):
    from mlx_lm import load

    from openenv_prime.mlx_trainer.config import LoRAConfig
    from openenv_prime.mlx_trainer.training.lora import apply_lora

    model, tok = load(str(tiny_model_dir))
    apply_lora(model, LoRAConfig(rank=4, scale=20.0, layers=-1))
    return model, tok


def test_generation_matches_mlx_lm_batch_generate_and_keeps_eos(tiny):
    import mlx.core as mx
    from mlx_lm import batch_generate
    from mlx_lm.sample_utils import make_sampler

    from openenv_prime.mlx_trainer.rollouts.generation import generate, render_prompt

    model, tok = tiny
    prompts = [render_prompt(tok, [{"role": "user", "content": q}]) for q in ("say 7:", "rep 3:", "1+2=")] * 8
    mx.random.seed(1)
    ours = generate(model, tok, prompts, max_tokens=6, temperature=1.0)
    mx.random.seed(1)
    ref = batch_generate(model, tok, prompts, max_tokens=6, return_token_ids=True, sampler=make_sampler(temp=1.0),
                         completion_batch_size=len(prompts), prefill_batch_size=len(prompts))
    eos = set(tok.eos_token_ids)
    for c, ids in zip(ours, ref.token_ids):
        if c.stopped:
            assert c.tokens[:-1] == ids and c.tokens[-1] in eos
        else:
            assert c.tokens == ids and len(ids) == 6
        assert c.text == tok.decode(ids)


def test_teacher_forced_logprobs_match_sampling_logprobs(tiny):
    import mlx.core as mx
    from mlx_lm import batch_generate
    from mlx_lm.sample_utils import make_sampler

    from openenv_prime.mlx_trainer.rollouts.generation import render_prompt
    from openenv_prime.mlx_trainer.training.grpo import token_logprobs

    model, tok = tiny
    prompts = [render_prompt(tok, [{"role": "user", "content": q}]) for q in ("say 7:", "rep 12:")]
    mx.random.seed(2)
    out = batch_generate(model, tok, prompts, max_tokens=4, return_token_ids=True, return_logprobs=True,
                         sampler=make_sampler(temp=1.0), completion_batch_size=2, prefill_batch_size=2)
    pairs = [(p, ids) for p, ids in zip(prompts, out.token_ids) if ids]
    batch = make_batch(pairs, [0.0] * len(pairs))
    lp = token_logprobs(model, batch, temperature=1.0)
    for row, (p, ids), ref in zip(range(len(pairs)), pairs, out.logprobs):
        got = lp[row, len(p) - 1: len(p) - 1 + len(ids)].tolist()
        assert max(abs(a - b) for a, b in zip(got, ref)) < 1e-4


def test_training_changes_only_lora_and_kl_reference_is_the_base(tiny_model_dir):
    import mlx.core as mx
    import mlx.optimizers as optim
    from mlx.utils import tree_flatten
    from mlx_lm import load

    from openenv_prime.mlx_trainer.config import GRPOConfig, LoRAConfig
    from openenv_prime.mlx_trainer.training.grpo import token_logprobs, train_on_batch
    from openenv_prime.mlx_trainer.training.lora import apply_lora, lora_disabled

    model, _ = load(str(tiny_model_dir))
    mx.random.seed(0)
    apply_lora(model, LoRAConfig(rank=4, scale=20.0, layers=1))
    frozen_before = {k: mx.array(v) for k, v in tree_flatten(model.parameters()) if "lora_" not in k}
    batch = make_batch([([5, 6, 7], [10, 11, 2]), ([5, 6, 8], [12, 2])] * 2, [1.0, -1.0, 1.0, -1.0])
    base_lp = token_logprobs(model, batch, 1.0)  # lora_b starts at zero: LoRA on == base
    cfg = GRPOConfig(learning_rate=1e-3, kl_beta=0.1, updates_per_step=3)
    opt = optim.Adam(learning_rate=cfg.learning_rate)
    metrics = train_on_batch(model, opt, batch, cfg)
    assert metrics["kl"] > 0  # after the first update the policy moved away from the base
    after = dict(tree_flatten(model.parameters()))
    assert all(mx.array_equal(after[k], v).item() for k, v in frozen_before.items())
    assert any("lora_b" in k and mx.abs(v).max().item() > 0 for k, v in after.items())
    with lora_disabled(model):
        assert mx.allclose(token_logprobs(model, batch, 1.0), base_lp, atol=1e-5).item()
    moved = token_logprobs(model, batch, 1.0)
    assert not mx.allclose(moved, base_lp, atol=1e-4).item()
    # the surrogate pushed up the positive-advantage completion's log-prob
    m = batch.mask
    assert ((moved - base_lp) * m)[0].sum().item() > 0
