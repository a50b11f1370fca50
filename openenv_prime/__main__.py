import sys

from openenv_prime.cli import main

sys.exit(main())
