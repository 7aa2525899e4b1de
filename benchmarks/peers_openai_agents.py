"""The OpenAI Agents SDK on Temporal (``OpenAIAgentsPlugin``), as temporalio's samples set
it up, for ``wakeful bench peers``: an ``agents.Agent`` run with ``Runner.run`` inside a
workflow, the model calls made by the plugin's activity with the SDK's default provider
(the Responses API through the default OpenAI client: ``OPENAI_BASE_URL`` /
``OPENAI_API_KEY`` of the worker point it at the provider simulator).

The conversation is one long-running workflow, as in temporalio's customer-service sample:
each turn is an update that appends the user's message to the input list the workflow
carries and runs the agent on it; ``result.to_input_list()`` is the next turn's input; the
workflow continues as new with it when Temporal suggests it.
"""

from __future__ import annotations

from typing import Any

from agents import Agent, Runner, TResponseInputItem
from temporalio import workflow

__all__ = ["WORKFLOW", "OpenAIAgentsChat", "agent"]

WORKFLOW = "PeersOpenAIAgentsChat"
INSTRUCTIONS = "You are a friendly companion in a long conversation. Reply briefly."

agent: Agent[Any] = Agent(name="companion", instructions=INSTRUCTIONS)


@workflow.defn(name=WORKFLOW)
class OpenAIAgentsChat:
    @workflow.init
    def __init__(self, input_items: list[TResponseInputItem] | None = None) -> None:
        self.input_items: list[TResponseInputItem] = list(input_items or [])

    @workflow.run
    async def run(self, input_items: list[TResponseInputItem] | None = None) -> None:
        await workflow.wait_condition(
            lambda: (
                workflow.info().is_continue_as_new_suggested() and workflow.all_handlers_finished()
            )
        )
        workflow.continue_as_new(self.input_items)

    @workflow.update
    async def chat(self, text: str) -> str:
        self.input_items.append({"content": text, "role": "user"})
        result = await Runner.run(agent, self.input_items)
        self.input_items = result.to_input_list()
        return str(result.final_output)
