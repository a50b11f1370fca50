"""A policy that knows no environment, for the play tests: it reads the prompt and does what its rule says."""

from __future__ import annotations


class Reader:
    """A policy that knows no environment: it reads the prompt and does what it says."""

    def __init__(self, rule):
        self.rule = rule
        self.prompts: list[list[dict]] = []

    async def complete(self, prompts):
        self.prompts.extend(prompts)
        return [self.rule(p) for p in prompts]
