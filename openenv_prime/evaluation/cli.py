"""`openenv-prime eval`: evaluate an OpenAI-compatible model on an OpenEnv split, per task family.

Every `EvalConfig` field has a flag (`EvalConfig.spelling`), and errors name the flag, not the Python field.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from openenv_prime.cli_support import DeprecatedAlias, ExampleFormatter
from openenv_prime.client.engine.episode_rules import DEFAULT_RULES, REWARD_MODES
from openenv_prime.client.prompts.budget import DEFAULT_PROMPT_BUDGET
from openenv_prime.client.prompts.hidden import DEFAULT_HIDDEN_FIELDS
from openenv_prime.client.prompts.observations import DEFAULT_BUDGET
from openenv_prime.evaluation.config import DEFAULT_SYSTEM_PROMPT, EvalConfig


def _family_field(value: str) -> str | None:
    return None if value.lower() == "none" else value


def _template(value: str) -> str:
    """A template as typed in a shell: ``\\n`` is a line break (bash's "..." keeps it as two characters)."""
    return value.replace("\\n", "\n")


def _json_object(value: str) -> dict:
    try:
        parsed = json.loads(value)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"not JSON ({exc}); write an object such as '{{\"seed\": 3}}'") from None
    if not isinstance(parsed, dict):
        raise argparse.ArgumentTypeError(f"must be a JSON object such as '{{\"seed\": 3}}', got {value}")
    return parsed


def register(subparsers: argparse._SubParsersAction) -> None:
    _register_eval(subparsers)
    _register_show(subparsers)
    _register_plot(subparsers)


def _register_show(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "show",
        help="print a few of an eval's episodes: the prompts, the model's replies, each step's reward",
        description="Print episodes an eval wrote: every message the model was sent and every reply, each step's "
        "reward, the episode's reward and why it ended, invalid actions and the environment's errors. RUN is an "
        "`openenv-prime eval` report (its episodes file beside it), an episodes JSONL file, or a run directory "
        "with episodes.jsonl (an `openenv-prime train` run: its last eval unless --step says which).",
        epilog=SHOW_EXAMPLES,
        formatter_class=ExampleFormatter,
    )
    p.add_argument("run", type=Path, metavar="RUN", help="a report, an episodes JSONL file, or a run directory")
    p.add_argument("-n", "--limit", type=int, default=3, help="episodes to print (default: %(default)s)")
    p.add_argument("--family", default=None, help="only this family's episodes")
    p.add_argument("--failed", action="store_true", help="only the episodes that were not solved")
    p.add_argument("--step", type=int, default=None, help="the eval at this training step (default: the last)")
    p.add_argument("--max-chars", type=int, default=800,
                   help="characters shown of each message; 0 shows all (default: %(default)s)")
    p.set_defaults(func=_show)


def _show(args: argparse.Namespace) -> int:
    from rich.console import Console

    from openenv_prime.evaluation.episodes import episodes_file, read_episodes
    from openenv_prime.evaluation.show import choose, episode_panel

    try:
        path = episodes_file(args.run)
        rows = choose(read_episodes(path), step=args.step, family=args.family, failed=args.failed, limit=args.limit)
    except (FileNotFoundError, ValueError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    console = Console()
    for row in rows:
        console.print(episode_panel(row, args.max_chars))
    console.print(f"{len(rows)} episode(s) of {path}", highlight=False)
    return 0


SHOW_EXAMPLES = """\
examples:
  openenv-prime show eval-results.json              # the episodes `openenv-prime eval` wrote beside its report
  openenv-prime show runs/mlx-default --failed -n 5 # a train run's last eval: five unsolved episodes
  openenv-prime show episodes.jsonl --step 10 --family 2

Episode files and their fields: docs/evaluation.md in the openenv-prime repository.
"""


def _register_plot(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "plot",
        help="per-family eval accuracy against steps, episodes and cost (PNG); several runs overlay",
        description="Draw per-family eval accuracy from eval logs against optimizer steps, the sampler's episodes and "
        "its cost (generated tokens): an EvalHarness JSONL log (a TRL run's, a plain loop's), or a run directory of "
        "`openenv-prime train`. With several runs, one line style per run (e.g. curriculum vs uniform).",
        epilog=PLOT_EXAMPLES,
        formatter_class=ExampleFormatter,
    )
    p.add_argument("runs", nargs="+", type=Path, metavar="RUN",
                   help="a run directory (its log.jsonl or evals.jsonl) or an eval log (JSONL)")
    p.add_argument("--out", type=Path, help="PNG to write (default: FIRST_RUN's folder/plots/accuracy*.png)")
    p.set_defaults(func=_plot)


def _plot(args: argparse.Namespace) -> int:
    from openenv_prime.evaluation.curves import plot_runs

    try:
        out = plot_runs(args.runs, args.out)
    except (FileNotFoundError, ValueError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    print(out)
    return 0


PLOT_EXAMPLES = """\
examples:
  openenv-prime plot runs/mlx-default               # a train run: writes runs/mlx-default/plots/accuracy*.png
  openenv-prime plot runs/curriculum runs/uniform --out compare.png
  openenv-prime plot evals.jsonl                    # an EvalHarness log (TRL, a plain loop)

Eval logs and what they hold: docs/evaluation.md in the openenv-prime repository.
"""

# Real invocations (tests/test_cli_help.py parses every `openenv-prime ...` line); M is the model's name.
EVAL_EXAMPLES = """\
Two servers take part: the OpenEnv environment server (--base-url, which `openenv-prime serve` starts) and
the model's OpenAI-compatible endpoint (--model-base-url: vLLM, mlx_lm.server, a TRL vLLM server, OpenAI), or
none for the model: a checkpoint evaluated in this process (--model-path for transformers/TRL, --mlx for the MLX
trainer's runs).

examples:
  # a served environment, and a model behind an OpenAI-compatible endpoint (here vLLM on port 8080)
  openenv-prime serve chain-sum --port 8000 &
  vllm serve M --port 8080 &
  openenv-prime eval --base-url http://127.0.0.1:8000 --model M --model-base-url http://127.0.0.1:8080/v1
  # the same with the embedded chain_sum server, started for this run only; 50 tasks per family (tier)
  openenv-prime eval --serve-chain-sum --per-family 50 --model M --model-base-url http://127.0.0.1:8080/v1
  # a server without the Task API (an OpenEnv environment's own app): the tasks come from a task list
  openenv-prime eval --base-url http://127.0.0.1:8001 --tasks tasks.jsonl --split test --model M --model-base-url http://127.0.0.1:8080/v1
  # a held-out split: questions no train task asks, 32 per family, two families only
  openenv-prime serve reasoning-gym --datasets products,basic_arithmetic --tiers 1 --heldout-size 32 --port 8000 &
  openenv-prime eval --split heldout --per-family 32 --families products/0 basic_arithmetic/0 --model M --model-base-url http://127.0.0.1:8080/v1
  # a TRL run's checkpoint in this process, no model server (its newest checkpoint-N; a PEFT adapter with its base)
  openenv-prime eval --serve-chain-sum --model-path trl-out --system-prompt "Reply with only the final number." --max-tokens 16
  # an MLX trainer's run, with the eval settings and the environment server of the run's own evals
  openenv-prime eval --mlx runs/mlx-default

Every flag, with the settings the trainers share: docs/verifiers.md (its `openenv-prime eval` section) and
docs/openenv.md, in the openenv-prime repository.
"""


def _register_eval(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "eval",
        help="accuracy per task family of a model (an OpenAI-compatible endpoint, or a local checkpoint) on an "
        "OpenEnv split",
        description="Draws --per-family tasks of every family from the split (deterministically from --seed), "
        "plays them over the environment server's /ws episodes with greedy replies from the model (its endpoint, or a "
        "checkpoint loaded in this process), prints a "
        "per-family accuracy table and writes a JSON report (results, config, package versions, seed). "
        "Tasks come from the server's Task API, or from a task list (--tasks FILE.jsonl) for a server without one.",
        epilog=EVAL_EXAMPLES,
        formatter_class=ExampleFormatter,
    )
    where = p.add_mutually_exclusive_group()
    where.add_argument("--base-url", default="http://127.0.0.1:8000",
                       help="URL of the OpenEnv environment server (not the model; the model's endpoint is "
                       "--model-base-url) (default: %(default)s)")
    where.add_argument("--serve-chain-sum", action="store_true",
                       help="start the embedded chain_sum environment server on a free local port for this run, "
                       "in place of --base-url")
    p.add_argument("--tiers", type=int, default=5, help="tiers of the embedded chain_sum server (default: %(default)s)")
    p.add_argument("--env-name", default=None, help="environment name (default: the only one the server lists)")
    p.add_argument("--model", default=None,
                   help="model name sent to the endpoint (needed with --model-base-url; else the report's name for "
                   "the model, default: the path)")
    model = p.add_argument_group("the model: an endpoint, or a checkpoint evaluated in this process (one of)")
    which = model.add_mutually_exclusive_group(required=True)
    which.add_argument("--model-base-url", default=None,
                       help="the model's OpenAI-compatible endpoint (vLLM, mlx_lm.server, ...), e.g. "
                       "http://127.0.0.1:8080/v1; the environment server is --base-url")
    which.add_argument("--model-path", default=None, metavar="DIR",
                       help="a transformers checkpoint, no model server: a model directory, a TRL checkpoint (with a "
                       "PEFT adapter, the base model adapter_config.json names is loaded first, offline) or a TRL "
                       "output_dir (its newest checkpoint-N); prompts rendered with its tokenizer's chat template as "
                       "GRPOTrainer renders them; pass the run's --system-prompt and --max-tokens (needs the trl extra)")
    which.add_argument("--mlx", default=None, metavar="RUN",
                       help="an `openenv-prime train` run (its newest checkpoint) or one of its checkpoints "
                       "(RUN/checkpoints/step_N), no model server; the eval settings of the run's own evals (test "
                       "split, system prompt, prompt settings, episode rules, tasks per family, reply length) stand "
                       "wherever a flag is left at its default, and so does its environment server (its base_url, or "
                       "its embedded server, started for the eval) unless --base-url or --serve-chain-sum names one "
                       "(needs the mlx extra)")
    p.add_argument("--api-key", default=None, help="bearer token (default: $OPENAI_API_KEY, or none)")
    p.add_argument("--max-tokens", type=int, default=256, help="max new tokens per reply (default: %(default)s)")
    tasks = p.add_argument_group("tasks")
    tasks.add_argument("--tasks", default=None, metavar="FILE.jsonl",
                       help="task list to use instead of the server's Task API: one JSON object per line with the "
                       "reset arguments of a task, e.g. {\"split\": \"test\", \"id\": \"s3\", \"tier\": 1, \"reset\": "
                       "{\"seed\": 3}} (see docs/openenv.md)")
    tasks.add_argument("--split", default=None,
                       help="split to evaluate (default: the test split, the first of test, eval, validation the server lists)")
    tasks.add_argument("--per-family", type=int, default=20, help="tasks per family (default: %(default)s)")
    tasks.add_argument("--families", nargs="+", default=None, help="only these families (default: all)")
    tasks.add_argument("--family-field", type=_family_field, default="auto",
                       help="task-spec field naming the family (a dotted path such as info.level); 'none' puts every task "
                       "in one family; 'auto' takes the field the server declares in /splits, else the specs' 'family' "
                       "or 'tier' field (default: %(default)s)")
    tasks.add_argument("--id-field", default="id",
                       help="task-spec field with the durable task id; split/index when a spec lacks it (default: %(default)s)")
    tasks.add_argument("--seed", type=int, default=0, help="chooses the tasks (default: %(default)s)")
    episodes = p.add_argument_group("episodes")
    episodes.add_argument("--system-prompt", default=DEFAULT_SYSTEM_PROMPT,
                          help="our system message, followed by the reply format read from the action schema (its "
                          "descriptions, legal values, bounds; a JSON object's fields; MCP tool calls); an environment "
                          "that brings its own instructions has them sent in its place; an empty string sends none of "
                          "ours (default: %(default)r)")
    shown = p.add_argument_group("what the model sees (docs/openenv.md)")
    shown.add_argument("--observation-template", type=_template, default=None, metavar="TEMPLATE",
                       help="how observations are shown: a field name, or a template of fields such as "
                       "'{message} at ({x}, {y})' (specs :grid, :grid=N, :text, :json; \\n is a line break) "
                       "(default: the environment's text first, then its other fields within --observation-budget; "
                       "--observation-field is its deprecated old name)")
    # the old name of --observation-template: its own setting (observation_field), so that setting both is refused
    shown.add_argument("--observation-field", type=_template, default=None, action=DeprecatedAlias,
                       new="--observation-template")
    shown.add_argument("--observation-budget", type=int, default=DEFAULT_BUDGET, metavar="CHARS",
                       help="characters per observation; fields that do not fit are left out and named (default: %(default)s)")
    shown.add_argument("--prompt-budget", type=int, default=DEFAULT_PROMPT_BUDGET, metavar="CHARS",
                       help="characters per prompt, the system prompt included; the oldest turns are left out first "
                       "(never the system prompt, the task or the newest turn) and a note says how many "
                       "(default: %(default)s)")
    shown.add_argument("--hidden-fields", nargs="*", default=list(DEFAULT_HIDDEN_FIELDS), metavar="NAME",
                       help="fields never shown to the model, at any depth, because they may hold the answer; replaces "
                       "the list, e.g. to show an environment's own 'target' (default: "
                       + " ".join(DEFAULT_HIDDEN_FIELDS) + ")")
    # --action-field and --action-fields keep the names of the settings they set (action_field, action_fields), which
    # the verifiers taskset, the MLX trainer's TOML and the TRL integration share
    shown.add_argument("--action-field", default=None, metavar="NAME",
                       help="ONE field: the action field that a plain-text (non-JSON) reply is put into, as it is "
                       "(default: the action's only field the model fills); unlike --action-fields, it offers the "
                       "model no other field")
    shown.add_argument("--action-fields", nargs="+", default=[], metavar="NAME",
                       help="SEVERAL fields: optional action fields to offer the model too, which it is not "
                       "offered by default because they read as the environment's settings (a non-null default, or a "
                       "description calling them configuration; the server fills them in); it does not change where "
                       "a plain-text reply goes (that is --action-field) (default: none)")
    shown.add_argument("--action-card", default=None, metavar="FILE",
                       help="an action card (TOML or JSON): the action fields the model fills, their legal values, "
                       "fixed values and an example, in place of the format read from the action schema; "
                       "`openenv-prime inspect --write-card FILE` writes the inferred one to edit (default: none)")
    episodes.add_argument("--reset-kwargs", type=_json_object, default={}, metavar="JSON",
                          help="extra reset arguments for every episode, a JSON object such as '{\"difficulty\": 2}' "
                          "(not split/index/episode_id)")
    # the episode rules: the trainer's and the verifiers taskset's defaults (client/engine/episode_rules.py)
    episodes.add_argument("--max-steps", type=int, default=DEFAULT_RULES.max_steps,
                          help="environment steps per episode; an episode still running then is counted as "
                          "truncated (default: %(default)s)")
    episodes.add_argument("--max-invalid-actions", type=int, default=DEFAULT_RULES.max_invalid_actions,
                          help="invalid replies fed back to the model; the next one ends the episode (default: %(default)s)")
    episodes.add_argument("--reward-mode", choices=REWARD_MODES, default=DEFAULT_RULES.reward_mode,
                          help="how the scored steps' rewards become the episode's reward, as in training (default: %(default)s)")
    episodes.add_argument("--reward-clip", type=float, nargs=2, default=None, metavar=("LOW", "HIGH"),
                          help="clip the episode's reward into [LOW, HIGH] (default: no clip)")
    episodes.add_argument("--invalid-flags", nargs="*", default=list(DEFAULT_RULES.invalid_flags), metavar="KEY",
                          help="observation or metadata keys that, set to true, mark a step's action invalid: an "
                          "episode the environment ends that way counts as ended by an invalid action (default: %(default)s)")
    episodes.add_argument("--invalid-flags-in-state", action="store_true",
                          help="also look for those keys in the environment's state() when it ends an episode "
                          "(textarena keeps its flag there; one more message per episode)")
    episodes.add_argument("--no-invalid-errors", dest="invalid_errors", action="store_false",
                          help="do not count a step whose observation reports an error (a non-empty error or exception "
                          "string, a non-zero exit_code with a Python traceback in stderr) as an invalid action")
    episodes.add_argument("--success-threshold", type=float, default=1.0,
                          help="an episode whose total reward reaches this counts as solved (default: %(default)s)")
    episodes.add_argument("--no-reset-check", dest="check_reset", action="store_false",
                          help="skip the check (three resets in fresh sessions before the eval) that the server plays the task asked for")
    run = p.add_argument_group("run")
    run.add_argument("--max-concurrency", type=int, default=32,
                     help="episodes open at once, i.e. the batch handed to the model (default: %(default)s)")
    run.add_argument("--model-concurrency", type=int, default=None,
                     help="model requests in flight (default: --max-concurrency; use ~4 for mlx_lm.server)")
    run.add_argument("--timeout", type=float, default=30.0, help="seconds per environment answer (default: %(default)s)")
    run.add_argument("--out", default="eval-results.json", help="JSON report path, checked before the eval (default: %(default)s)")
    kept = p.add_argument_group("episodes and datasets (docs/evaluation.md)")
    kept.add_argument("--episodes", default=None, metavar="FILE.jsonl",
                      help="where every episode is written, its prompts, replies and step rewards, for `openenv-prime "
                      "show` (default: beside --out, e.g. eval-results.episodes.jsonl)")
    kept.add_argument("--no-episodes", dest="write_episodes", action="store_false", help="write no episodes file")
    kept.add_argument("--save-dataset", default=None, metavar="DIR",
                      help="also write the episodes and the per-family summary as a Hugging Face dataset (parquet "
                      "and a dataset card) to DIR, which datasets.load_dataset(DIR) reads (needs `datasets`: the trl extra)")
    kept.add_argument("--push-to-hub", default=None, metavar="REPO",
                      help="push that dataset to the Hub dataset repository REPO (e.g. user/my-evals; logged in with "
                      "`hf auth login` or $HF_TOKEN)")
    kept.add_argument("--env-dataset", default=None, metavar="REPO",
                      help="the Hub repo id of the environment's own dataset (the one with an environment.yaml), named "
                      "in the dataset card")
    settings = [*EvalConfig.model_fields, "max_tokens"]
    p.set_defaults(func=_main, flag_defaults={name: p.get_default(name) for name in settings})


def config_kwargs(args: argparse.Namespace, base_url: str, run=None) -> dict:
    """The EvalConfig fields the flags set (every field has one, `EvalConfig.spelling(field)`); with ``run`` (an MLX
    trainer's run, --mlx), the settings of its own evals wherever a flag is left at its default."""
    fields = {name: getattr(args, name) for name in EvalConfig.model_fields if name != "base_url"}
    fields["system_prompt"] = args.system_prompt or None
    if run is not None:
        saved = run.eval_config(base_url).model_dump()
        fields = {name: value if _flag_given(args, name) else saved[name] for name, value in fields.items()}
    return {"base_url": base_url, **fields}


def _flag_given(args: argparse.Namespace, name: str) -> bool:
    """Whether the flag of setting ``name`` was set to something other than its default."""
    return getattr(args, name) != args.flag_defaults[name]


def describe_validation_error(exc) -> str:
    """pydantic errors with the CLI flag in place of each field name."""
    parts = []
    for error in exc.errors():
        name = str(error["loc"][0]) if error["loc"] else ""
        message = error["msg"].removeprefix("Value error, ")
        parts.append(f"{EvalConfig.spelling(name) if name in EvalConfig.model_fields else name}: {message}")
    return "; ".join(parts)


def _episodes_path(args: argparse.Namespace) -> Path | None:
    from openenv_prime.evaluation.episodes import beside

    if not args.write_episodes:
        return None
    return Path(args.episodes) if args.episodes else beside(args.out)


def _check_kept(args: argparse.Namespace) -> str | None:
    """What would keep the episodes or the dataset from being written, found before the eval runs (or None)."""
    from openenv_prime.evaluation.report import check_writable

    episodes = _episodes_path(args)
    if episodes is not None:
        try:
            check_writable(episodes)
        except ValueError as exc:
            return f"--episodes: {exc}"
    if args.save_dataset or args.push_to_hub:
        from openenv_prime.evaluation.dataset import require_datasets

        try:
            require_datasets()
        except ImportError as exc:
            return f"{'--save-dataset' if args.save_dataset else '--push-to-hub'}: {exc}"
        if args.save_dataset and Path(args.save_dataset).is_file():
            return f"--save-dataset: {args.save_dataset} is a file; name a folder for the dataset"
    return None


def _server_about(args: argparse.Namespace, base_url: str) -> dict:
    """The environment's name and version from its server, for a dataset card (asked while the server is up)."""
    if not (args.save_dataset or args.push_to_hub):
        return {}
    from openenv_prime.evaluation.dataset import server_metadata

    return server_metadata(base_url, timeout=args.timeout)


def _keep(args: argparse.Namespace, result, document: dict, environment: dict) -> list[str]:
    """Write the episodes file (named in the report), the dataset and its push; a line for each thing written."""
    import os
    import tempfile

    from openenv_prime.evaluation.episodes import episode_rows, write_episodes

    lines = []
    episodes = _episodes_path(args)
    if episodes is not None:
        write_episodes(episodes, episode_rows(result))
        document["episodes_file"] = os.path.relpath(episodes.resolve(), Path(args.out).resolve().parent)
        lines.append(f"episodes written to {episodes} (`openenv-prime show {args.out}` prints a few)")
    if args.save_dataset or args.push_to_hub:
        from openenv_prime.evaluation.dataset import push_dataset, save_dataset

        folder = Path(args.save_dataset) if args.save_dataset else Path(tempfile.mkdtemp(prefix="openenv-prime-dataset-"))
        save_dataset(result, folder, model=document["model"], server=environment, env_dataset=args.env_dataset)
        lines.append(f"dataset written to {folder} (datasets.load_dataset({str(folder)!r}))")
        if args.push_to_hub:
            try:
                url = push_dataset(folder, args.push_to_hub)
            except Exception as exc:  # the Hub's errors differ between huggingface_hub releases; the dataset is on disk
                raise OSError(f"--push-to-hub {args.push_to_hub} failed ({type(exc).__name__}: {exc}); the dataset "
                              f"is in {folder}") from exc
            lines.append(f"dataset pushed to {url}")
    return lines


def _saved_model(args: argparse.Namespace):
    """The checkpoint --model-path or --mlx names (None for an endpoint), found before anything loads: the TRL
    integration's and the MLX trainer's own loaders, imported only here (their frameworks live there)."""
    if args.model_path:
        from openenv_prime.trl.checkpoint_policy import find_checkpoint

        return find_checkpoint(args.model_path)
    if args.mlx:
        from openenv_prime.mlx_trainer.run_policy import find_run

        return find_run(args.mlx)
    return None


def _policy(args: argparse.Namespace, saved) -> tuple:
    """The policy the flags name and the report's account of the model: an endpoint's, or a checkpoint loaded here
    (greedy, on this thread: `run_eval` calls a plain function there)."""
    if saved is None:
        from openenv_prime.evaluation import OpenAIPolicy

        policy = OpenAIPolicy(args.model_base_url, args.model, args.api_key, max_tokens=args.max_tokens,
                              max_concurrency=args.model_concurrency or args.max_concurrency)
        return policy, {"name": args.model, "base_url": policy.url, "max_tokens": args.max_tokens,
                        "temperature": policy.temperature}
    if args.model_path:
        from openenv_prime.trl.checkpoint_policy import load_checkpoint_policy

        tokens = args.max_tokens
        policy = load_checkpoint_policy(saved, max_new_tokens=tokens, batch_size=args.max_concurrency)
    else:
        from openenv_prime.mlx_trainer.run_policy import load_run_policy

        tokens = args.max_tokens if _flag_given(args, "max_tokens") else saved.max_new_tokens
        policy = load_run_policy(saved, tokens)
    name = args.model or str(args.model_path or args.mlx)
    return policy, {"name": name, **saved.about(), "max_tokens": tokens, "temperature": 0.0}


def _main(args: argparse.Namespace) -> int:
    import os
    import tempfile
    from contextlib import nullcontext

    from pydantic import ValidationError
    from rich.console import Console
    from rich.markup import escape

    from openenv_prime.client.wire.errors import OpenEnvError
    from openenv_prime.evaluation import ModelEndpointError, run_eval
    from openenv_prime.evaluation.report import check_writable, family_table, report_dict, run_warnings, write_json

    err = Console(stderr=True)

    def fail(message: str, code: int = 1) -> int:
        err.print(f"[red]error:[/red] {escape(message)}", highlight=False, soft_wrap=True)  # one line: greppable
        return code

    if args.model_base_url and not args.model:
        return fail("--model-base-url needs --model, the model's name at that endpoint", 2)
    try:
        saved = _saved_model(args)
    except (ImportError, OSError, ValueError) as exc:
        return fail(str(exc), 2)
    run = saved if args.mlx else None
    try:
        check_writable(args.out)
        EvalConfig(**config_kwargs(args, args.base_url, run))  # bad settings fail before a server starts
    except ValueError as exc:
        if isinstance(exc, ValidationError):
            return fail(f"bad eval setting: {describe_validation_error(exc)}", 2)
        return fail(f"--out: {exc}", 2)
    problem = _check_kept(args)
    if problem:
        return fail(problem, 2)
    for note in saved.notes if saved is not None else []:
        err.print(escape(note), highlight=False)
    try:
        policy, model = _policy(args, saved)
    except (ImportError, OSError, ValueError) as exc:
        return fail(str(exc), 2)
    try:
        if args.serve_chain_sum:
            from openenv_prime.envs.launch import local_server

            server = local_server("chain-sum", tiers=args.tiers, max_sessions=max(64, args.max_concurrency))
        elif run is not None and not _flag_given(args, "base_url"):
            server = run.server()  # the run's own: its base_url, or its embedded server started for the eval
        else:
            server = nullcontext(args.base_url)
        with server as base_url:
            result = run_eval(EvalConfig(**config_kwargs(args, base_url, run)), policy)
            environment = _server_about(args, base_url)
    except (OpenEnvError, ModelEndpointError, ValueError, KeyError, OSError, RuntimeError) as exc:
        message = exc.args[0] if isinstance(exc, KeyError) and exc.args else str(exc)  # KeyError's str() adds quotes
        return fail(str(message))
    document = report_dict(result, model=model)
    if args.serve_chain_sum:
        document["server"] = {"embedded": "chain-sum", "tiers": args.tiers}
    console = Console()
    for choice in result.choices:
        err.print(escape(choice), highlight=False)
    console.print(family_table(result))
    for note in run_warnings(result):  # the same list as the report's "warnings"
        err.print(f"[yellow]warning:[/yellow] {escape(note)}", highlight=False)
    try:
        kept, not_kept = _keep(args, result, document, environment), None
    except (OSError, ImportError, ValueError) as exc:  # the eval is done: the report is still written
        kept, not_kept = [], str(exc)
    try:
        path = write_json(args.out, document)
    except OSError as exc:  # the eval is done: keep its results somewhere
        fd, spare = tempfile.mkstemp(prefix="openenv-prime-eval-", suffix=".json")
        os.close(fd)
        fallback = write_json(spare, document)
        return fail(f"cannot write {args.out} ({exc}); the report was written to {fallback} instead")
    console.print(f"{len(result.results)} episodes in {result.elapsed_s:.1f} s; report written to {path}")
    for line in kept:
        console.print(line, highlight=False)
    if not_kept:
        return fail(not_kept)
    if result.stopped:
        return fail(f"the eval stopped before playing every task: {result.stopped}")
    return 0
