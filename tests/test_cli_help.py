"""`openenv-prime --help` explains itself: every command (found by walking the parser, not listed here) shows an
example or names the doc that covers it, every example it shows parses, no help names a repository file that an
installed package lacks, old flag spellings keep working (hidden, with a note on stderr), and `train --print-config`
prints the embedded default config."""

from __future__ import annotations

import argparse
import os
import re
import shlex
import subprocess
import sys
import tomllib
from importlib import resources
from pathlib import Path

import pytest

from openenv_prime.cli import build_parser, main
from tests.support.waiting import HANG_GUARD_S

ROOT = Path(__file__).resolve().parents[1]
DOC = re.compile(r"\bdocs/([\w.-]+\.md)\b")
EXAMPLE = re.compile(r"^ +(openenv-prime\s.*)$", re.MULTILINE)  # an indented command line in a description or epilog
SHELL_OPERATORS = {"&", "&&", "|", ">", ">>", ";"}
# Repository folders an installed package does not have: help may not send a user there for a file.
REPOSITORY_ONLY = ("configs/", "patches/", "scripts/", "examples/", "benchmarks/", "studies/")


def commands(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()):
    """(the words after `openenv-prime`, its parser) for the top level and every subcommand, nested ones included."""
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from commands(sub, (*path, name))


COMMANDS = dict(commands(build_parser()))


def command_id(path: tuple[str, ...]) -> str:
    return " ".join(("openenv-prime", *path))


def examples(help_text: str) -> list[list[str]]:
    """The argv (after `openenv-prime`) of every example command line, up to a shell operator or a comment."""
    found = []
    for line in EXAMPLE.findall(help_text):
        words = shlex.split(line, comments=True)
        cut = next((i for i, w in enumerate(words) if w in SHELL_OPERATORS), len(words))
        found.append(words[1:cut])
    return found


def option_lines(help_text: str) -> str:
    """The help's option listing: the lines that introduce an option (`  --flag ...`)."""
    return "\n".join(line for line in help_text.splitlines() if re.match(r"^ {2}-", line))


def test_the_walk_finds_every_command_and_the_nested_ones():
    """Guards against checks that pass because they saw nothing."""
    names = {command_id(path) for path in COMMANDS}
    assert {"openenv-prime", "openenv-prime serve", "openenv-prime eval", "openenv-prime train",
            "openenv-prime export", "openenv-prime prime-rl validate"} <= names
    assert examples("x\n  openenv-prime eval --model 'a b' --x 1 &  # c\n openenv-prime serve y > f\n") == [
        ["eval", "--model", "a b", "--x", "1"], ["serve", "y"]]


@pytest.mark.parametrize("path", list(COMMANDS), ids=command_id)
def test_every_help_shows_an_example_or_names_its_doc(path):
    text = COMMANDS[path].format_help()
    assert examples(text) or DOC.search(text), f"{command_id(path)} --help shows no example and names no docs/*.md"
    for name in DOC.findall(text):
        assert (ROOT / "docs" / name).is_file(), f"{command_id(path)} --help names docs/{name}, which does not exist"


@pytest.mark.parametrize("path", list(COMMANDS), ids=command_id)
def test_no_help_names_a_repository_file_an_installed_package_lacks(path):
    text = COMMANDS[path].format_help()
    named = [folder for folder in REPOSITORY_ONLY if folder in text]
    assert not named, f"{command_id(path)} --help names {named}: an installed package has no such folder"


@pytest.mark.parametrize("path", [p for p in COMMANDS if examples(COMMANDS[p].format_help())], ids=command_id)
def test_the_examples_in_help_parse(path, capsys):
    """Each example is a real invocation: the full parser takes it (`--print-config` prints and exits 0)."""
    for argv in examples(COMMANDS[path].format_help()):
        try:
            build_parser().parse_args(argv)
        except SystemExit as stop:
            error = capsys.readouterr().err
            assert stop.code == 0, f"{command_id(path)} --help shows `openenv-prime {shlex.join(argv)}`: {error}"


def test_the_eval_help_has_examples_of_each_use():
    argvs = examples(COMMANDS[("eval",)].format_help())
    evals = [a for a in argvs if a[0] == "eval"]
    assert len(evals) >= 3
    assert any("--model-base-url" in a and "--base-url" in a for a in evals)  # a served env with a model endpoint
    assert any("--tasks" in a for a in evals)                                 # a task list
    assert any("--split" in a for a in evals) and any("--per-family" in a for a in evals)


def test_the_top_level_help_names_every_doc_and_says_what_is_not_a_subcommand():
    text = COMMANDS[()].format_help()
    docs = sorted(p.name for p in (ROOT / "docs").glob("*.md"))
    assert docs and all(f"docs/{name}" in text for name in docs), f"the top-level help names {DOC.findall(text)}"
    subcommands = {path[0] for path in COMMANDS if path}
    assert "trl" not in subcommands and "openenv_prime.trl" in text
    prose = " ".join(text.split())
    assert "Training with TRL or prime-rl is not a subcommand" in prose
    assert "openenv_prime.prime_rl_adapter.OpenEnvPrimeSampler from its own TOML" in prose


@pytest.mark.parametrize("name", ["train", "export"])
def test_the_mlx_commands_say_they_are_the_mlx_trainer(name):
    listing = COMMANDS[()].format_help()
    assert re.search(rf"^ +{name} +\(MLX\)", listing, re.MULTILINE), listing
    assert "(MLX)" in COMMANDS[(name,)].format_help()


def _action(path: tuple[str, ...], flag: str) -> argparse.Action:
    return next(a for a in COMMANDS[path]._actions if flag in a.option_strings)


def test_the_eval_base_url_help_says_it_is_the_environment_not_the_model():
    help_text = _action(("eval",), "--base-url").help
    assert "environment server" in help_text and "not the model" in help_text and "--model-base-url" in help_text


def test_action_field_and_action_fields_each_say_how_they_differ_from_the_other():
    one, several = _action(("eval",), "--action-field").help, _action(("eval",), "--action-fields").help
    assert "--action-fields" in one and "ONE field" in one
    assert "--action-field)" in several and "SEVERAL fields" in several


def test_train_print_config_prints_the_packaged_default(capsys):
    packaged = resources.files("openenv_prime.mlx_trainer").joinpath("default.toml").read_text()
    with pytest.raises(SystemExit) as stop:
        main(["train", "--print-config"])
    out = capsys.readouterr().out
    assert stop.value.code == 0 and out == packaged
    assert tomllib.loads(out) == tomllib.loads(packaged) and tomllib.loads(out)["steps"] >= 1
    help_text = COMMANDS[("train",)].format_help()
    assert "--print-config" in option_lines(help_text) and "openenv-prime train --print-config" in help_text


def test_train_print_config_runs_as_a_command(tmp_path):
    """As a user runs it, outside the repository: the TOML alone on stdout, a config the trainer loads as its default."""
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    done = subprocess.run([sys.executable, "-m", "openenv_prime", "train", "--print-config"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=HANG_GUARD_S)
    assert done.returncode == 0, done.stderr[-2000:]
    from openenv_prime.mlx_trainer.config import load_config

    (tmp_path / "printed.toml").write_text(done.stdout)
    assert load_config(tmp_path / "printed.toml") == load_config(None)


# (command words before the flags, old spelling, new spelling, value, the dest both set)
RENAMED = [
    (["serve", "my_pkg.env:MyEnvironment"], "--seeds", "--tasks-per-split", "3", "tasks_per_split", 3),
    (["eval", "--model", "m", "--model-base-url", "http://h:1/v1"], "--observation-field", None, "{x}",
     "observation_field", "{x}"),
]


@pytest.mark.parametrize("words, old, new, value, dest, parsed", RENAMED, ids=lambda v: v if isinstance(v, str) else None)
def test_an_old_spelling_still_works_says_so_on_stderr_and_is_hidden(words, old, new, value, dest, parsed, capsys):
    args = build_parser().parse_args([*words, old, value])
    err = capsys.readouterr().err
    assert getattr(args, dest) == parsed
    assert old in err and "deprecated" in err, err
    if new is not None:
        assert getattr(build_parser().parse_args([*words, new, value]), dest) == parsed
        assert new in err and "deprecated" not in capsys.readouterr().err
        assert new in option_lines(COMMANDS[(words[0],)].format_help())
    assert not re.search(rf"{re.escape(old)}\b(?!-)", option_lines(COMMANDS[(words[0],)].format_help()))


def test_without_an_old_spelling_nothing_is_said_and_the_defaults_stand(capsys):
    args = build_parser().parse_args(["serve", "chain-sum"])
    assert args.tasks_per_split is None and capsys.readouterr().err == ""
    args = build_parser().parse_args(["eval", "--model", "m", "--model-base-url", "http://h:1/v1"])
    assert args.observation_field is None and capsys.readouterr().err == ""


def test_the_old_observation_field_reaches_the_eval_config_and_cannot_be_set_twice(capsys):
    from pydantic import ValidationError

    from openenv_prime.evaluation import EvalConfig
    from openenv_prime.evaluation.cli import config_kwargs

    base = ["eval", "--model", "m", "--model-base-url", "http://h:1/v1", "--observation-field", "{question}"]
    args = build_parser().parse_args(base)
    assert EvalConfig(**config_kwargs(args, args.base_url)).observation_field == "{question}"
    both = build_parser().parse_args([*base, "--observation-template", "{message}"])
    with pytest.raises(ValidationError, match="observation_field"):
        EvalConfig(**config_kwargs(both, both.base_url))


def test_the_old_seeds_spelling_serves_through_the_command(tmp_path):
    """The whole `serve` path with the old spelling: the count reaches the refusal of an unused flag, with the note."""
    done = subprocess.run(
        [sys.executable, "-m", "openenv_prime.envs", "serve", "my_pkg.env:MyEnvironment", "--seeds", "3",
         "--tiers", "2", "--port", "0"],
        cwd=ROOT, capture_output=True, text=True, timeout=HANG_GUARD_S)
    assert done.returncode != 0 and "--tiers does not apply to MODULE:CLASS" in done.stderr
    assert "--seeds is deprecated" in done.stderr and "--tasks-per-split" in done.stderr
