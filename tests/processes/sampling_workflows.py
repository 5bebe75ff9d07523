"""Workflow tools that ask the client's model (free of server set-up: the sandbox re-imports it)."""

from __future__ import annotations

from pydantic import BaseModel
from temporalio import workflow

from fastmcp_temporal.workflows import SamplingRefused, sample


class Haiku(BaseModel):
    first_draft: str
    final: str
    model: str
    stop_reason: str | None


@workflow.defn
class HaikuWriter:
    """Write a haiku with the client's model: a draft, then a revision of it."""

    @workflow.run
    async def run(self, topic: str) -> Haiku:
        draft = await sample(
            f"A haiku about {topic}",
            system_prompt="You are a poet.",
            max_tokens=60,
            temperature=0.2,
            model_preferences=["sonnet", "gpt"],
            key="draft",
        )
        final = await sample(
            [
                {"role": "user", "content": {"type": "text", "text": f"A haiku about {topic}"}},
                {"role": "assistant", "content": {"type": "text", "text": draft.text}},
                {"role": "user", "content": {"type": "text", "text": "Shorter."}},
            ],
            max_tokens=40,
            key="revise",
        )
        return Haiku(
            first_draft=draft.text,
            final=final.text,
            model=final.model,
            stop_reason=final.stop_reason,
        )


@workflow.defn
class CarefulWriter:
    """Ask the model; say what happened when it declines."""

    @workflow.run
    async def run(self, topic: str) -> str:
        try:
            return (await sample(f"Write about {topic}", max_tokens=20)).text
        except SamplingRefused as refused:
            return f"refused ({refused.stop_reason}): {refused.message}"


@workflow.defn
class CarelessWriter:
    """Ask the model; a refusal goes uncaught."""

    @workflow.run
    async def run(self, topic: str) -> str:
        return (await sample(f"Write about {topic}", max_tokens=20)).text
