"""The speed paths and the laptop options on a real tiny mlx model: completion-only log-probs, the
single on-policy pass, shared prompt prefill, loss variants and clip-higher, gradient accumulation,
LR schedule, DoRA, a quantized base, and fusing a run into an mlx_lm directory."""

from __future__ import annotations

import pytest

from openenv_prime.mlx_trainer.config import GRPOConfig, LoRAConfig, config_from_dict
from openenv_prime.mlx_trainer.training.grpo import make_batch

# prompts of different lengths (the completion span starts at the shortest), completions of different lengths
SEQUENCES = [([5, 6, 7, 8], [10, 11, 2]), ([5, 6], [12, 2]), ([5, 6, 9], [13, 14, 15, 2]), ([7, 6, 5, 4, 3], [11, 2])]
ADVANTAGES = [1.0, -1.0, 0.5, -0.5]


def _model(path, lora: LoRAConfig | None = None, seed: int = 0):
    import mlx.core as mx
    from mlx_lm import load

    from openenv_prime.mlx_trainer.training.lora import apply_lora

    model, tok = load(str(path))
    mx.random.seed(seed)
    apply_lora(model, lora or LoRAConfig(rank=4, scale=20.0, layers=-1))
    return model, tok


def _lora_tensors(model):
    from mlx.utils import tree_flatten

    return dict(tree_flatten(model.trainable_parameters()))


def _perturb(model, scale: float = 0.05, seed: int = 3):
    """Non-zero lora_b so gradients and ratios are not at the degenerate LoRA-off point."""
    import mlx.core as mx

    mx.random.seed(seed)
    model.update(_tree_map_lora(model, lambda k, v: v + scale * mx.random.normal(v.shape) if "lora_b" in k else v))


def _tree_map_lora(model, fn):
    from mlx.utils import tree_flatten, tree_unflatten

    return tree_unflatten([(k, fn(k, v)) for k, v in tree_flatten(model.trainable_parameters())])


def test_completion_logprobs_match_the_full_forward_pass(tiny_model_dir):
    import mlx.core as mx

    from openenv_prime.mlx_trainer.training.grpo import token_logprobs

    model, _ = _model(tiny_model_dir)
    _perturb(model)
    batch = make_batch(SEQUENCES, ADVANTAGES)
    logits = model(batch.inputs).astype(mx.float32) / 0.7
    full = mx.take_along_axis(logits, batch.targets[..., None], axis=-1)[..., 0] - mx.logsumexp(logits, axis=-1)
    ours = token_logprobs(model, batch, 0.7)
    assert ours.shape == full.shape
    assert mx.allclose(ours * batch.mask, full * batch.mask, atol=1e-5).item()


def test_single_on_policy_pass_has_the_two_pass_gradient(tiny_model_dir):
    import mlx.core as mx
    import mlx.nn as nn
    from mlx.utils import tree_flatten

    from openenv_prime.mlx_trainer.training.grpo import completion_logprobs, grpo_loss

    model, _ = _model(tiny_model_dir)
    _perturb(model)
    batch = make_batch(SEQUENCES, ADVANTAGES)
    cfg = GRPOConfig()
    old = mx.stop_gradient(completion_logprobs(model, batch, cfg.temperature)[0])
    grad = nn.value_and_grad(model, grpo_loss)
    (loss1, _), g1 = grad(model, batch, None, None, cfg)
    (loss2, _), g2 = grad(model, batch, old, None, cfg)
    assert abs(loss1.item() - loss2.item()) < 1e-6
    for (k, a), (_, b) in zip(tree_flatten(g1), tree_flatten(g2)):
        assert mx.allclose(a, b, atol=1e-6).item(), k
    assert any(mx.abs(a).max().item() > 0 for _, a in tree_flatten(g1))


@pytest.mark.parametrize("loss", ["grpo", "dapo", "dr_grpo", "gspo"])
def test_gradient_accumulation_gives_the_unsplit_update(tiny_model_dir, loss):
    import mlx.core as mx
    import mlx.optimizers as optim

    from openenv_prime.mlx_trainer.training.grpo import train_on_batch

    results = []
    for parts in (1, 3):
        model, _ = _model(tiny_model_dir)
        _perturb(model)
        cfg = GRPOConfig(loss=loss, gradient_accumulation=parts, learning_rate=1e-2, kl_beta=0.1)
        metrics = train_on_batch(model, optim.SGD(learning_rate=1e-2), make_batch(SEQUENCES, ADVANTAGES), cfg)
        results.append((metrics, _lora_tensors(model)))
    (m1, w1), (m3, w3) = results
    assert abs(m1["loss"] - m3["loss"]) < 1e-5 and abs(m1["kl"] - m3["kl"]) < 1e-5
    assert all(mx.allclose(w1[k], w3[k], atol=1e-6).item() for k in w1)


def test_loss_variants_differ_where_they_should(tiny_model_dir):
    """On-policy, GSPO's sequence ratio has GRPO's gradient; DAPO weighs tokens, not sequences; Dr. GRPO
    divides by B * max_new_tokens."""
    import mlx.core as mx
    import mlx.nn as nn
    from mlx.utils import tree_flatten

    from openenv_prime.mlx_trainer.training.grpo import grpo_loss

    model, _ = _model(tiny_model_dir)
    _perturb(model)
    batch = make_batch(SEQUENCES, ADVANTAGES)
    grads = {}
    for loss in ("grpo", "gspo", "dapo", "dr_grpo"):
        _, g = nn.value_and_grad(model, grpo_loss)(model, batch, None, None, GRPOConfig(loss=loss, max_new_tokens=8))
        grads[loss] = dict(tree_flatten(g))
    same = lambda a, b: all(mx.allclose(grads[a][k], grads[b][k], atol=1e-6).item() for k in grads[a])
    assert same("grpo", "gspo")
    assert not same("grpo", "dapo")
    # Dr. GRPO = the token sum over B * max_new_tokens; DAPO = the same sum over all tokens (11 here)
    k = next(iter(grads["dapo"]))
    assert mx.allclose(grads["dr_grpo"][k] * (4 * 8), grads["dapo"][k] * 11, atol=1e-5).item()


def test_clip_high_lets_a_raised_ratio_keep_its_gradient(tiny_model_dir):
    import mlx.core as mx
    import mlx.nn as nn
    from mlx.utils import tree_flatten

    from openenv_prime.mlx_trainer.training.grpo import completion_logprobs, grpo_loss

    model, _ = _model(tiny_model_dir)
    _perturb(model)
    batch = make_batch(SEQUENCES, [1.0] * 4)  # positive advantages: only the upper clip matters
    lp = mx.stop_gradient(completion_logprobs(model, batch, 1.0)[0])
    old = lp - 0.25  # every ratio is exp(0.25) = 1.28

    def norm(cfg):
        _, g = nn.value_and_grad(model, grpo_loss)(model, batch, old, None, cfg)
        return sum(mx.abs(v).sum().item() for _, v in tree_flatten(g))

    assert norm(GRPOConfig(clip=0.2)) == 0.0  # clipped at 1.2: no gradient
    assert norm(GRPOConfig(clip=0.2, clip_high=0.3)) > 0.0  # DAPO clip-higher: 1.28 < 1.3 still learns


def test_dr_grpo_advantages_are_not_divided_by_the_std():
    from openenv_prime.mlx_trainer.training.grpo import group_advantages

    assert group_advantages([1.0, 0.0, 0.0, 0.0], scale=False) == [0.75, -0.25, -0.25, -0.25]
    assert group_advantages([1.0, 1.0], scale=False) is None


@pytest.mark.parametrize("schedule", ["constant", "linear", "cosine"])
def test_learning_rate_warms_up_then_follows_the_schedule(schedule):
    import mlx.core as mx

    from openenv_prime.mlx_trainer.training.grpo import make_optimizer

    cfg = GRPOConfig(learning_rate=1e-3, lr_schedule=schedule, warmup_steps=3, min_lr_ratio=0.1)
    opt = make_optimizer(cfg, steps=10)
    params = {"w": mx.zeros((2,))}
    opt.init(params)
    rates = []  # the rate each of the run's 10 updates used
    for _ in range(10):
        params = opt.apply_gradients({"w": mx.ones((2,))}, params)
        rates.append(opt.learning_rate.item())
    assert rates[0] < rates[1] < rates[2] < rates[3] == pytest.approx(1e-3)
    if schedule == "constant":
        assert all(r == pytest.approx(1e-3) for r in rates[3:])
    else:
        assert all(a > b for a, b in zip(rates[3:], rates[4:]))
        assert rates[-1] == pytest.approx(1e-4, rel=1e-3)


def test_dora_layers_train_and_switch_off_to_the_base(tiny_model_dir):
    import mlx.core as mx
    import mlx.optimizers as optim

    from openenv_prime.mlx_trainer.training.grpo import token_logprobs, train_on_batch
    from openenv_prime.mlx_trainer.training.lora import lora_disabled, lora_modules

    model, _ = _model(tiny_model_dir, LoRAConfig(rank=4, scale=20.0, layers=-1, dora=True))
    assert lora_modules(model) and all(type(m).__name__ == "DoRALinear" for m in lora_modules(model))
    batch = make_batch(SEQUENCES, ADVANTAGES)
    base = token_logprobs(model, batch, 1.0)
    m_before = {k: v for k, v in _lora_tensors(model).items() if k.endswith(".m")}
    assert m_before
    train_on_batch(model, optim.Adam(learning_rate=1e-2), batch, GRPOConfig(updates_per_step=2))
    after = _lora_tensors(model)
    assert any(not mx.allclose(after[k], v).item() for k, v in m_before.items())  # magnitudes trained
    assert not mx.allclose(token_logprobs(model, batch, 1.0), base, atol=1e-4).item()
    with lora_disabled(model):
        assert mx.allclose(token_logprobs(model, batch, 1.0), base, atol=1e-4).item()
    assert all(mx.array_equal(_lora_tensors(model)[k], after[k]).item() for k in after)  # restored


@pytest.mark.parametrize("bits", [4, 8])
def test_quantized_base_trains_lora_only(tiny_model_dir, bits):
    import mlx.core as mx
    import mlx.nn as nn
    import mlx.optimizers as optim
    from mlx.utils import tree_flatten

    from openenv_prime.mlx_trainer.model.sources import load_base, quantization_of
    from openenv_prime.mlx_trainer.rollouts.generation import generate, render_prompt
    from openenv_prime.mlx_trainer.training.grpo import train_on_batch
    from openenv_prime.mlx_trainer.training.lora import apply_lora

    model, tok = load_base(str(tiny_model_dir), bits, 32)
    assert quantization_of(model) == {"group_size": 32, "bits": bits}
    assert any(isinstance(m, nn.QuantizedLinear) for _, m in model.named_modules())
    apply_lora(model, LoRAConfig(rank=4, layers=-1))
    frozen = {k: mx.array(v) for k, v in tree_flatten(model.parameters()) if "lora_" not in k}
    train_on_batch(model, optim.Adam(learning_rate=1e-2), make_batch(SEQUENCES, ADVANTAGES), GRPOConfig())
    after = dict(tree_flatten(model.parameters()))
    assert all(mx.array_equal(after[k], v).item() for k, v in frozen.items())
    assert any("lora_b" in k and mx.abs(v).max().item() > 0 for k, v in after.items())
    out = generate(model, tok, [render_prompt(tok, [{"role": "user", "content": "say 7:"}])] * 2, max_tokens=3, temperature=1.0)
    assert all(1 <= len(c.tokens) <= 3 for c in out)


def test_repeated_prompts_share_one_prefill_and_generate_what_batch_generate_does(tiny_model_dir):
    from mlx_lm import batch_generate

    from openenv_prime.mlx_trainer.rollouts.generation import generate, render_prompt, shared_prefixes

    model, tok = _model(tiny_model_dir)
    _perturb(model)
    asks = [render_prompt(tok, [{"role": "user", "content": q}]) for q in ("say 7:", "rep 3:", "1+2=")]
    prompts = [asks[0]] * 4 + [asks[1]] * 3 + [asks[2]]
    inputs, caches, _ = shared_prefixes(model, prompts)
    assert [len(i) for i in inputs[:7]] == [1] * 7 and inputs[7] == asks[2]
    assert caches[7] is None and all(c is not None for c in caches[:7])
    assert caches[0][0].offset == len(asks[0]) - 1 and caches[0][0].keys is caches[1][0].keys  # one prefill, shared
    ours = generate(model, tok, prompts, max_tokens=5, temperature=0.0)
    ref = batch_generate(model, tok, prompts, max_tokens=5, return_token_ids=True,
                         completion_batch_size=len(prompts), prefill_batch_size=len(prompts))
    for c, ids in zip(ours, ref.token_ids):
        assert (c.tokens[:-1] if c.stopped else c.tokens) == ids


def test_new_config_keys_are_validated():
    cfg = config_from_dict({"model": {"quantize_bits": 4}, "lora": {"dora": True},
                            "grpo": {"loss": "gspo", "clip_high": 0.28, "gradient_accumulation": 2,
                                     "lr_schedule": "cosine", "warmup_steps": 2}})
    assert cfg.model.quantize_bits == 4 and cfg.lora.dora and cfg.grpo.loss == "gspo"
    from openenv_prime.mlx_trainer.config import ConfigError

    for bad, key in (({"model": {"quantize_bits": 3}}, "model.quantize_bits"), ({"grpo": {"loss": "ppo"}}, "grpo.loss"),
                     ({"grpo": {"gradient_accumulation": 0}}, "grpo.gradient_accumulation"),
                     ({"grpo": {"lr_schedule": "step"}}, "grpo.lr_schedule")):
        with pytest.raises(ConfigError, match=key.replace(".", r"\.")):
            config_from_dict(bad)
