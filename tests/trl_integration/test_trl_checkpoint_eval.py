"""`openenv-prime eval --model-path`: a TRL checkpoint evaluated in this process, no model server, asks and answers
exactly what the in-training eval of the same weights did (a full model, and a PEFT adapter over its base)."""

from __future__ import annotations

import json

import pytest

from openenv_prime.cli import main
from openenv_prime.evaluation import EvalSchedule
from openenv_prime.evaluation.episodes import read_episodes
from openenv_prime.trl import OpenEnvTRL, OpenEnvTRLConfig
from tests.trl_integration.tiny import grpo_args, save_tiny, tiny_model, tiny_tokenizer

SYSTEM = "Reply with only the final number."
TOKENS = 5
PER_FAMILY = 2


def even_length(completions, **kwargs):
    """1.0 for an even number of characters: groups come out mixed, so the weights move."""
    from openenv_prime.trl.rewards import completion_text

    return [float(len(completion_text(c)) % 2 == 0) for c in completions]


def train_and_evaluate(url, out, *, peft: bool):
    """Two steps, evaluated at 0 and 2, checkpoint-2 saved; the in-training eval episodes by step."""
    from transformers import AutoModelForCausalLM
    from trl import GRPOTrainer

    openenv = OpenEnvTRL(OpenEnvTRLConfig(base_url=url, group_size=4, system_prompt=SYSTEM), score=even_length)
    args = grpo_args(out / "trl", max_steps=2, learning_rate=0.2 if peft else 3e-2)  # a LoRA starts as the base
    tokenizer = tiny_tokenizer()
    extra = {}
    if peft:
        from peft import LoraConfig

        model = AutoModelForCausalLM.from_pretrained(save_tiny(out / "base"))  # adapter_config.json names this folder
        extra["peft_config"] = LoraConfig(r=4, lora_alpha=8, target_modules="all-linear")
    else:
        model = tiny_model(tokenizer)
    trainer = GRPOTrainer(model=model, reward_funcs=[openenv.reward], train_dataset=openenv.dataset(args), args=args,
                          processing_class=tokenizer, **extra)
    openenv.attach(trainer, schedule=EvalSchedule(every=2), per_family=PER_FAMILY, max_new_tokens=TOKENS,
                   log=out / "evals.jsonl")
    trainer.train()
    openenv.close()
    by_step: dict[int, dict] = {}
    for row in read_episodes(out / "episodes.jsonl"):
        by_step.setdefault(row["step"], {})[(row["split"], row["index"])] = row
    return by_step


@pytest.mark.parametrize("peft", [False, True], ids=["full-model", "peft-adapter"])
def test_a_checkpoint_evaluated_here_answers_as_the_in_training_eval(chain_sum_server, tmp_path, peft, capsys):
    trained = train_and_evaluate(chain_sum_server, tmp_path, peft=peft)
    checkpoint = tmp_path / "trl" / "checkpoint-2"
    assert (checkpoint / "adapter_config.json").is_file() == peft
    report = tmp_path / "eval.json"
    # the output_dir: its newest checkpoint is taken (and said so)
    code = main(["eval", "--base-url", chain_sum_server, "--model-path", str(tmp_path / "trl"), "--system-prompt",
                 SYSTEM, "--max-tokens", str(TOKENS), "--per-family", str(PER_FAMILY), "--out", str(report)])
    assert code == 0, capsys.readouterr().err
    assert "newest checkpoint, checkpoint-2" in capsys.readouterr().err
    document = json.loads(report.read_text())
    assert document["model"]["path"] == str(checkpoint)
    assert document["model"].get("base_model") == (str(tmp_path / "base") if peft else None)
    here = {(r["split"], r["index"]): r for r in read_episodes(tmp_path / "eval.episodes.jsonl")}

    at_two, at_zero = trained[2], trained[0]
    assert here.keys() == at_two.keys() and len(here) == 5 * PER_FAMILY
    for key, row in here.items():  # the same prompts, the same replies, the same rewards
        assert (row["messages"], row["reward"], row["tokens"]) == (
            at_two[key]["messages"], at_two[key]["reward"], at_two[key]["tokens"])
    assert row["messages"][0] == {"role": "system", "content": SYSTEM}
    accuracy = json.loads((tmp_path / "evals.jsonl").read_text().splitlines()[-1])["accuracy"]
    assert {f["family"]: f["accuracy"] for f in document["families"]} == accuracy
    # the training moved the weights: the untrained model answered otherwise, so the match above is the checkpoint's
    assert any(at_zero[key]["messages"] != row["messages"] for key, row in here.items())


def test_a_folder_without_a_model_is_refused_naming_what_to_pass(tmp_path, capsys):
    code = main(["eval", "--model-path", str(tmp_path), "--out", str(tmp_path / "r.json")])
    err = capsys.readouterr().err
    assert code == 2 and "holds no model" in err and "checkpoint-N" in err
    assert not (tmp_path / "r.json").exists()
