"""`openenv-prime serve ENV`: start an OpenEnv environment server (imports openenv only when it runs)."""

from __future__ import annotations

import argparse

ENVIRONMENTS = ("chain-sum",)


def _serve(args: argparse.Namespace) -> int:
    from openenv_prime.envs.serve import serve_chain_sum

    tiers = args.tiers if args.tiers is not None else (10 if args.schedule == "interleaved" else 5)
    return serve_chain_sum(
        args.host, args.port, tiers, args.schedule, args.max_sessions, args.log_level, args.session_timeout
    )


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "serve",
        help="serve an OpenEnv environment (Task API over HTTP, episodes over /ws)",
        description="Serve an OpenEnv environment under uvicorn. Prints 'listening on http://HOST:PORT' once bound.",
    )
    parser.add_argument("env", choices=ENVIRONMENTS, help="environment to serve")
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1, loopback only)")
    parser.add_argument("--port", type=int, default=8000, help="port to bind; 0 picks a free port (default 8000)")
    parser.add_argument("--tiers", type=int, default=None, help="number of difficulty tiers (default 5 lockstep, 10 interleaved)")
    parser.add_argument(
        "--schedule",
        choices=("lockstep", "interleaved"),
        default="lockstep",
        help="lockstep: tier t = t+2 terms of t+1 digits; interleaved: 2x1, 3x1, 3x2, .. (terms and digits alternate)",
    )
    parser.add_argument("--max-sessions", type=int, default=64, help="most concurrent /ws sessions (default 64)")
    parser.add_argument(
        "--session-timeout",
        type=float,
        default=None,
        metavar="SECONDS",
        help="close /ws sessions idle this long (checked every max(SECONDS/4, 5) s); default: never",
    )
    parser.add_argument("--log-level", default="warning", choices=("critical", "error", "warning", "info", "debug"))
    parser.set_defaults(func=_serve)
