"""Durable agents: the MCP client's model as a workflow step, with ``sample()``.

Its own module, as a workflow's should be: the workflow sandbox re-imports it.
"""

from temporalio import workflow

# --8<-- [start:workflow]
from fastmcp_temporal.workflows import SamplingRefused, sample


@workflow.defn
class Triage:
    @workflow.run
    async def run(self, ticket: str) -> str:
        try:
            plan = await sample(
                f"Plan the triage of: {ticket}",  # or a list of SamplingMessages / dicts
                system_prompt="You are a support lead. Answer in one line.",
                max_tokens=200,
                temperature=0,
                model_preferences=["sonnet", "gpt"],  # hints, in order; or ModelPreferences
            )
        except SamplingRefused:
            return "the model declined: a person triages this one"
        return plan.text


# --8<-- [end:workflow]
