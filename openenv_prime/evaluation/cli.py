"""`openenv-prime eval`: evaluate an OpenAI-compatible model on an OpenEnv split, per task family."""

from __future__ import annotations

import argparse

from openenv_prime.evaluation.prompts import DEFAULT_SYSTEM_PROMPT


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "eval",
        help="accuracy per task family of an OpenAI-compatible model on an OpenEnv split",
        description="Draws --per-family tasks of every family from the split (deterministically from --seed), "
        "plays them over the server's /ws episodes with greedy replies from the model endpoint, prints a "
        "per-family accuracy table and writes a JSON report (results, config, package versions, seed).",
    )
    where = p.add_mutually_exclusive_group()
    where.add_argument("--base-url", default="http://127.0.0.1:8000", help="OpenEnv server URL (default: %(default)s)")
    where.add_argument("--serve-chain-sum", action="store_true",
                       help="start the embedded chain_sum server on a free local port for this run")
    p.add_argument("--tiers", type=int, default=5, help="tiers of the embedded chain_sum server (default: %(default)s)")
    p.add_argument("--env-name", default=None, help="environment name (default: the only one the server lists)")
    p.add_argument("--model", required=True, help="model name sent to the endpoint")
    p.add_argument("--model-base-url", required=True,
                   help="OpenAI-compatible endpoint, e.g. http://127.0.0.1:8080/v1")
    p.add_argument("--api-key", default=None, help="bearer token (default: $OPENAI_API_KEY, or none)")
    p.add_argument("--max-tokens", type=int, default=256, help="max new tokens per reply (default: %(default)s)")
    p.add_argument("--split", default="test", help="split to evaluate (default: %(default)s)")
    p.add_argument("--per-family", type=int, default=20, help="tasks per family (default: %(default)s)")
    p.add_argument("--families", nargs="+", default=None, help="only these families (default: all)")
    p.add_argument("--family-field", default="tier", help="task-spec field naming the family (default: %(default)s)")
    p.add_argument("--seed", type=int, default=0, help="chooses the tasks (default: %(default)s)")
    p.add_argument("--system-prompt", default=DEFAULT_SYSTEM_PROMPT,
                   help="system message; an empty string sends none (default: %(default)r)")
    p.add_argument("--observation-field", default=None, help="observation field shown to the model (default: auto)")
    p.add_argument("--action-field", default=None, help="action field that gets the reply (default: auto)")
    p.add_argument("--max-steps", type=int, default=1, help="model turns per episode (default: %(default)s)")
    p.add_argument("--max-concurrency", type=int, default=32,
                   help="episodes open at once, i.e. the batch handed to the model (default: %(default)s)")
    p.add_argument("--model-concurrency", type=int, default=None,
                   help="model requests in flight (default: --max-concurrency; use ~4 for mlx_lm.server)")
    p.add_argument("--timeout", type=float, default=30.0, help="seconds per environment answer (default: %(default)s)")
    p.add_argument("--out", default="eval-results.json", help="JSON report path (default: %(default)s)")
    p.set_defaults(func=_main)


def _main(args: argparse.Namespace) -> int:
    from contextlib import nullcontext

    from pydantic import ValidationError
    from rich.console import Console
    from rich.markup import escape

    from openenv_prime.client.errors import OpenEnvError
    from openenv_prime.evaluation import EvalConfig, ModelEndpointError, OpenAIPolicy, run_eval
    from openenv_prime.evaluation.report import family_table, report_dict, write_json

    err = Console(stderr=True)
    try:
        policy = OpenAIPolicy(args.model_base_url, args.model, args.api_key, max_tokens=args.max_tokens,
                              max_concurrency=args.model_concurrency or args.max_concurrency)
        if args.serve_chain_sum:
            from openenv_prime.envs.launch import local_server

            server = local_server("chain-sum", tiers=args.tiers, max_sessions=max(64, args.max_concurrency))
        else:
            server = nullcontext(args.base_url)
        with server as base_url:
            config = EvalConfig(
                base_url=base_url, env_name=args.env_name, split=args.split, per_family=args.per_family,
                families=args.families, seed=args.seed, family_field=args.family_field,
                system_prompt=args.system_prompt or None, observation_field=args.observation_field,
                action_field=args.action_field, max_steps=args.max_steps, max_concurrency=args.max_concurrency,
                timeout=args.timeout,
            )
            result = run_eval(config, policy)
    except ValidationError as exc:
        err.print(f"[red]error:[/red] bad eval setting: {escape(str(exc))}", highlight=False)
        return 2
    except (OpenEnvError, ModelEndpointError, ValueError, KeyError, OSError, RuntimeError) as exc:
        message = exc.args[0] if isinstance(exc, KeyError) and exc.args else str(exc)  # KeyError's str() adds quotes
        err.print(f"[red]error:[/red] {escape(str(message))}", highlight=False)
        return 1
    document = report_dict(result, model={"name": args.model, "base_url": policy.url, "max_tokens": args.max_tokens,
                                          "temperature": policy.temperature})
    if args.serve_chain_sum:
        document["server"] = {"embedded": "chain-sum", "tiers": args.tiers}
    path = write_json(args.out, document)
    console = Console()
    console.print(family_table(result))
    console.print(f"{len(result.results)} episodes in {result.elapsed_s:.1f} s; report written to {path}")
    return 0
