"""`python -m openenv_prime.envs serve ...`: the `serve` command alone, without the other parts' CLIs.

`local_server` starts servers this way so that a server starts even while another part's CLI module
fails to import; `openenv-prime serve` takes the same arguments."""

import argparse
import sys

from openenv_prime.envs.cli import register

parser = argparse.ArgumentParser(prog="openenv-prime")
register(parser.add_subparsers(dest="command", required=True, metavar="COMMAND"))
args = parser.parse_args()
sys.exit(int(args.func(args) or 0))
