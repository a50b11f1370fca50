"""The OpenEnv wire: the Task API over HTTP (environments, splits, task specs, the action schema) and episodes over
``/ws`` (one socket per episode, and a pool that keeps sockets open from wave to wave), with their typed errors.

It knows nothing of tasks, prompts or episodes' rules, so it imports nothing from the rest of the client
(``tests/test_architecture.py`` holds that rule): everything else is built on it.
"""
