"""Test doubles for code built on openenv-prime: stand-ins for the outside world that a test can script.

They live in the package, not in `tests/`, because three places use them: this repository's tests, its benchmarks
(`benchmarks/`) and its prime-rl check (`patches/`), and a file outside `tests/` never imports from `tests/`. Users
can test their own policies, tasksets and training scripts with them too. Standard library only, so importing one
costs nothing and needs no extra installed.

- `scripted_openai`: an OpenAI-compatible chat server on 127.0.0.1 whose replies a rule decides.
"""
