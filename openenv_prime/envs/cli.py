"""`openenv-prime serve ENV`: start an OpenEnv environment server (imports openenv only when it runs).

ENV is `chain-sum`, `reasoning-gym` (datasets in curriculum tiers), `imported PACKAGE_DIR` (a package made by
openenv's `openenv import`, which has a Task API of its own), or `MODULE:CLASS`: any OpenEnv environment class (or
`MODULE:FUNCTION`, a function that returns the environment, for a class whose constructor needs Python objects),
served with the Task API over a task list (`--tasks`) or N seeded tasks per split (`--tasks-per-split`; `--seeds` is
its deprecated old name)."""

from __future__ import annotations

import argparse
import json

from openenv_prime.cli_support import DeprecatedAlias, ExampleFormatter

NAMED_ENVIRONMENTS = ("chain-sum", "reasoning-gym", "imported")
_CLASS_FLAGS = ("tasks", "tasks_per_split", "splits", "path", "env_name", "action", "observation", "env_kwargs")
_TIER_FLAGS = ("tiers", "schedule", "datasets", "train_size", "test_size", "heldout_size")
_USED_BY = {
    "chain-sum": {"tiers", "schedule"},
    "reasoning-gym": {"tiers", "datasets", "train_size", "test_size", "heldout_size"},
    "imported": {"env_kwargs"},
    "class": set(_CLASS_FLAGS),
}


def _flag(dest: str) -> str:
    return "--" + dest.replace("_", "-")


def _refuse_unused_flags(args: argparse.Namespace, kind: str) -> None:
    for dest in _CLASS_FLAGS + _TIER_FLAGS:
        if dest not in _USED_BY[kind] and getattr(args, dest) not in (None, []):
            target = "MODULE:CLASS" if kind == "class" else kind
            raise SystemExit(f"openenv-prime serve {args.env}: {_flag(dest)} does not apply to {target}")


def _env_kwargs(args: argparse.Namespace) -> dict | None:
    try:
        env_kwargs = json.loads(args.env_kwargs) if args.env_kwargs else None
    except json.JSONDecodeError as error:
        raise SystemExit(f"openenv-prime serve {args.env}: --env-kwargs is not JSON ({error.msg}); write e.g. '{{\"size\": 5}}'")
    if env_kwargs is not None and not isinstance(env_kwargs, dict):
        raise SystemExit(f"openenv-prime serve {args.env}: --env-kwargs must be a JSON object, e.g. '{{\"size\": 5}}'")
    return env_kwargs


def _serve_class(args: argparse.Namespace) -> int:
    from openenv_prime.envs.serve import serve_with_tasks

    if (args.tasks is None) == (args.tasks_per_split is None):
        raise SystemExit(
            f"openenv-prime serve {args.env}: pass exactly one of --tasks FILE.jsonl or --tasks-per-split N (a package "
            "made by `openenv import` has a Task API of its own: openenv-prime serve imported PACKAGE_DIR)"
        )
    if args.splits is not None and args.tasks_per_split is None:
        raise SystemExit(f"openenv-prime serve {args.env}: --splits goes with --tasks-per-split (a task list names its "
                         "own splits)")
    env_kwargs = _env_kwargs(args)
    if args.tasks_per_split is not None:
        from openenv_prime.envs.taskapi.seeds import SeedTasks

        splits = [s.strip() for s in (args.splits or "train,test").split(",")]
        try:
            tasks = SeedTasks(args.tasks_per_split, splits)
        except ValueError as error:
            raise SystemExit(f"openenv-prime serve {args.env}: --tasks-per-split/--splits: {error}")
    else:
        tasks = args.tasks
    return serve_with_tasks(
        args.env,
        tasks,
        host=args.host,
        port=args.port,
        log_level=args.log_level,
        action_cls=args.action,
        observation_cls=args.observation,
        env_name=args.env_name,
        env_kwargs=env_kwargs,
        max_sessions=args.max_sessions,
        session_timeout=args.session_timeout,
        paths=tuple(args.path or ()),
    )


def _serve_imported(args: argparse.Namespace) -> int:
    from openenv_prime.envs.serve import serve_imported

    if args.package is None:
        raise SystemExit("openenv-prime serve imported: name the package directory `openenv import` made: "
                         "openenv-prime serve imported PACKAGE_DIR")
    return serve_imported(args.package, host=args.host, port=args.port, log_level=args.log_level,
                          env_kwargs=_env_kwargs(args), max_sessions=args.max_sessions, session_timeout=args.session_timeout)


def _serve(args: argparse.Namespace) -> int:
    if args.package is not None and args.env != "imported":
        raise SystemExit(f"openenv-prime serve {args.env}: unexpected argument {args.package!r} (only `imported` takes a directory)")
    if ":" in args.env:
        _refuse_unused_flags(args, "class")
        return _serve_class(args)
    if args.env not in NAMED_ENVIRONMENTS:
        raise SystemExit(
            f"openenv-prime serve: unknown environment {args.env!r}; use one of {', '.join(NAMED_ENVIRONMENTS)} "
            f"or MODULE:CLASS (an OpenEnv Environment class, with --tasks or --tasks-per-split)"
        )
    _refuse_unused_flags(args, args.env)
    if args.env == "imported":
        return _serve_imported(args)
    max_sessions = 64 if args.max_sessions is None else args.max_sessions
    if args.env == "reasoning-gym":
        from openenv_prime.envs.serve import serve_reasoning_gym

        return serve_reasoning_gym(args, max_sessions)
    from openenv_prime.envs.serve import serve_chain_sum

    tiers = args.tiers if args.tiers is not None else (10 if args.schedule == "interleaved" else 5)
    return serve_chain_sum(
        args.host, args.port, tiers, args.schedule or "lockstep", max_sessions, args.log_level, args.session_timeout
    )


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "serve",
        help="serve an OpenEnv environment (Task API over HTTP, episodes over /ws)",
        description=(
            "Serve an OpenEnv environment under uvicorn. Prints 'listening on http://HOST:PORT' once bound.\n\n"
            "examples:\n"
            "  openenv-prime serve chain-sum --tiers 10 --schedule interleaved\n"
            "  openenv-prime serve reasoning-gym --datasets leg_counting,basic_arithmetic --tiers 3\n"
            "  openenv-prime serve imported ./my_env     # a package made by `openenv import SOURCE --name my_env`\n"
            "  openenv-prime serve my_pkg.server.env:MyEnvironment --tasks tasks.jsonl\n"
            "  openenv-prime serve my_pkg.server.env:MyEnvironment --tasks-per-split 500 --splits train,test\n\n"
            "imported serves a verifiers or ORS environment imported by openenv 0.10.0 with its own Task API, "
            "loading a verifiers environment once in the main thread (the generated app.py cannot under uvicorn). "
            "MODULE:CLASS serves any OpenEnv Environment class with the Task API added: reset(split=, index=) "
            "plays exactly that task by calling the class's own reset with the task's reset arguments. "
            "MODULE:FUNCTION serves the environments a function returns, for a class whose constructor needs "
            "Python objects (--env-kwargs go to the function).\n\n"
            "Serving, task lists and bringing your own environment: docs/openenv.md in the openenv-prime repository."
        ),
        formatter_class=ExampleFormatter,
    )
    parser.add_argument("env", metavar="ENV", help="chain-sum, reasoning-gym, imported, or MODULE:CLASS (an OpenEnv Environment class, or a function returning one)")
    parser.add_argument("package", metavar="PACKAGE_DIR", nargs="?", default=None,
                        help="with imported: the package directory `openenv import --output-dir D --name N` made (D/N)")
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1, loopback only)")
    parser.add_argument("--port", type=int, default=8000, help="port to bind; 0 picks a free port (default 8000)")
    parser.add_argument(
        "--max-sessions", type=int, default=None,
        help="most concurrent /ws sessions (default 64; 1 for a class without SUPPORTS_CONCURRENT_SESSIONS)",
    )
    parser.add_argument(
        "--session-timeout", type=float, default=None, metavar="SECONDS",
        help="close /ws sessions idle this long (checked every max(SECONDS/4, 5) s); default: never",
    )
    parser.add_argument("--log-level", default="warning", choices=("critical", "error", "warning", "info", "debug"))

    tiers = parser.add_argument_group("chain-sum and reasoning-gym")
    tiers.add_argument(
        "--tiers", type=int, default=None,
        help="difficulty tiers (chain-sum: default 5 lockstep, 10 interleaved; reasoning-gym: default 3)",
    )
    tiers.add_argument(
        "--schedule", choices=("lockstep", "interleaved"), default=None,
        help="chain-sum only. lockstep (default): tier t = t+2 terms of t+1 digits; interleaved: 2x1, 3x1, 3x2, ..",
    )
    tiers.add_argument(
        "--datasets", default=None, metavar="NAME[,NAME...]",
        help="reasoning-gym only: datasets that register a curriculum; tier t sets every curriculum attribute to level t",
    )
    tiers.add_argument("--train-size", type=int, default=None, metavar="N", help="reasoning-gym: train tasks per dataset and tier (default 10000)")
    tiers.add_argument("--test-size", type=int, default=None, metavar="N", help="reasoning-gym: test tasks per dataset and tier (default 200)")
    tiers.add_argument(
        "--heldout-size", type=int, default=None, metavar="N",
        help="reasoning-gym: add a split `heldout` of N test items per dataset and tier whose questions no train item asks, "
        "each question once (a tier with fewer such questions is refused); default: no such split",
    )

    own = parser.add_argument_group("MODULE:CLASS (any OpenEnv environment)")
    own.add_argument("--tasks", default=None, metavar="FILE.jsonl", help='task list: one {"split", "id", ..., "reset": {...}} object per line')
    own.add_argument("--tasks-per-split", type=int, default=None, metavar="N",
                     help="a count, not a seed: N tasks per split, task i of a split playing reset(seed=S) with that "
                     "split's i-th seed S (split k's seeds start at k * 1,000,000); old name: --seeds, deprecated")
    own.add_argument("--seeds", type=int, dest="tasks_per_split", action=DeprecatedAlias, new="--tasks-per-split")
    own.add_argument("--splits", default=None, metavar="A,B",
                     help="with --tasks-per-split: split names (default train,test); seeds are disjoint across splits")
    own.add_argument("--path", action="append", default=None, metavar="DIR", help="put DIR first on sys.path to import MODULE (repeatable)")
    own.add_argument("--env-name", default=None, help="name in the Task API routes /NAME/... (default: the environment's package, the folder holding its server/, e.g. envs.textarena_env.server.environment -> textarena_env; outside such a package, from the class: GridWorldEnvironment -> grid_world_env)")
    own.add_argument("--action", default=None, metavar="MODULE:CLASS", help="action class (default: read from the environment class)")
    own.add_argument("--observation", default=None, metavar="MODULE:CLASS", help="observation class (default: read from the environment class)")
    own.add_argument("--env-kwargs", default=None, metavar="JSON",
                     help="keyword arguments for the class's constructor (imported verifiers: for load_environment), as a JSON object")
    parser.set_defaults(func=_serve)
