"""An in-process chat harness: one chat request per turn, straight to the rollout's interception
endpoint. verifiers' `null` harness launches a `uv` program for every turn (about 2.4 s each on
two cores); this one costs what the model costs. verifiers allows an in-process loop as long as
every model call goes through the interception endpoint, which records the trace.

Each request is kept within the task's prompt budget by the rule every consumer shares
(`openenv_prime.client.prompts.budget`): verifiers hands a later turn the conversation so far, the prompt
sent before with the new turns appended, and the rule gives on it what the episode engine's prompt holds."""

from __future__ import annotations

import functools
import ssl

import httpx
import verifiers.v1 as vf
from pydantic import Field
from verifiers.v1.types import ID
from verifiers.v1.dialects.chat import message_to_wire

from openenv_prime.client.prompts.budget import fit_prompt


@functools.cache
def _tls() -> ssl.SSLContext:
    """Built once: loading the CA bundle costs about 0.3 s, more than a whole local episode."""
    return ssl.create_default_context()


class OpenEnvChatHarnessConfig(vf.HarnessConfig):
    id: ID = "openenv-prime"
    request_timeout: float = Field(600.0, gt=0)
    """Seconds one chat request may take, generation included."""


class OpenEnvChatHarness(vf.Harness[OpenEnvChatHarnessConfig]):
    APPENDS_SYSTEM_PROMPT = True
    SUPPORTS_RESUME = True  # each later turn relaunches on the whole conversation: one request
    EXECUTES_CODE = False
    NEEDS_CONTAINER = False

    async def launch(
        self,
        ctx: vf.ModelContext,
        trace: vf.Trace,
        runtime: vf.Runtime,
        endpoint: str,
        secret: str,
        mcp_urls: dict[str, str],
        data: vf.TaskData,
    ) -> vf.ProgramResult:
        system, prompt = self.resolve_prompt(data)
        messages = [{"role": "system", "content": system}] if system else []
        if isinstance(prompt, str):
            messages.append({"role": "user", "content": prompt})
        elif prompt is not None:
            messages.extend(message_to_wire(message) for message in prompt)
        budget = getattr(data, "prompt_budget", None)
        if budget is not None:
            messages = fit_prompt(messages, budget)
        try:
            async with httpx.AsyncClient(timeout=self.config.request_timeout, verify=_tls()) as http:
                response = await http.post(
                    f"{endpoint.rstrip('/')}/chat/completions",
                    headers={"Authorization": f"Bearer {secret}"},
                    json={"model": ctx.model, "messages": messages},
                )
        except httpx.HTTPError as error:
            return vf.ProgramResult(1, "", f"chat request to {endpoint} failed: {error!r}")
        if response.is_success:
            return vf.ProgramResult(0, "", "")
        return vf.ProgramResult(1, "", f"chat request failed: {response.status_code} {response.text[:2000]}")
