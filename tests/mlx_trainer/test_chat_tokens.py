"""A multi-turn episode's token sequence is the chat template's rendering of its conversation, with the
sampled reply tokens kept as sampled and only they marked for the loss."""

from __future__ import annotations

import pytest

from openenv_prime.mlx_trainer.rollouts.chat_tokens import ChatTokens


@pytest.fixture(scope="module")
def tiny_tokenizer(tiny_model_dir):
    from mlx_lm import load

    return load(str(tiny_model_dir))[1]


@pytest.fixture(scope="module")
def smollm2_tokenizer(smollm2_dir):
    from mlx_lm import load

    return load(str(smollm2_dir))[1]


def _play(tokenizer, replies: list[str], stopped: bool):
    chat = ChatTokens(tokenizer)
    eos = sorted(tokenizer.eos_token_ids)[0]
    transcript = chat.start([{"role": "system", "content": "be brief"}, {"role": "user", "content": "say 7:"}])
    reply_tokens = []
    for turn, reply in enumerate(replies):
        tokens = list(tokenizer.encode(reply, add_special_tokens=False)) + ([eos] if stopped else [])
        reply_tokens.append(tokens)
        chat.add_reply(transcript, tokens, reply)
        if turn + 1 < len(replies):
            chat.add_user(transcript, f"observation {turn + 1}: 3+4", stopped)
    return transcript, reply_tokens


@pytest.mark.parametrize("stopped", [True, False])
@pytest.mark.parametrize("which", ["tiny", "smollm2"])
def test_sequence_is_the_templated_conversation_and_only_replies_are_trained(which, stopped, tiny_tokenizer,
                                                                          smollm2_tokenizer):
    # both named, not looked up by name: tests/conftest.py then sends them to the worker that converted SmolLM2
    tokenizer = {"tiny": tiny_tokenizer, "smollm2": smollm2_tokenizer}[which]
    transcript, reply_tokens = _play(tokenizer, ["7", "x 1", "42"], stopped)
    # the model was conditioned on exactly what the chat template makes of the conversation
    last_turn_end = len(transcript.tokens) - len(reply_tokens[-1])
    before_last = tokenizer.decode(transcript.tokens[:last_turn_end])
    expected = tokenizer.apply_chat_template(transcript.messages[:-1], add_generation_prompt=True, tokenize=False)
    assert before_last == expected  # an unfinished reply is closed by the template's end-of-turn (not trained)
    # the mask covers the sampled tokens, in order, and nothing else
    marked = [t for t, m in zip(transcript.tokens, transcript.model_mask) if m == 1.0]
    assert marked == [t for tokens in reply_tokens for t in tokens]
    assert len(transcript.model_mask) == len(transcript.tokens)
    assert transcript.completion == transcript.tokens[transcript.prompt_length:]
    assert sum(transcript.completion_mask) == sum(len(t) for t in reply_tokens)
    for turn, tokens in enumerate(reply_tokens):  # replies are never re-tokenized
        assert any(transcript.tokens[i:i + len(tokens)] == tokens for i in range(len(transcript.tokens)))


def test_first_prompt_is_rendered_once_per_distinct_observation(tiny_tokenizer):
    chat = ChatTokens(tiny_tokenizer)
    a = chat.start([{"role": "user", "content": "say 7:"}])
    b = chat.start([{"role": "user", "content": "say 7:"}])
    a.tokens.append(1)
    assert b.tokens == a.tokens[:-1] and b.prompt_length == len(b.tokens)
