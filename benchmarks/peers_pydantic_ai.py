"""pydantic-ai's Temporal durable execution, as its documentation sets it up, for
``wakeful bench peers``: a regular ``Agent`` with the ``TemporalDurability`` capability,
defined at module level with its workflow, registered on the worker by
``PydanticAIPlugin`` through ``__pydantic_ai_agents__``.

The conversation is one long-running workflow: each turn is an update that runs the agent
with the ``message_history`` the workflow carries (``result.all_messages()`` of the last
turn, as pydantic-ai's docs carry a conversation across runs), and the workflow continues
as new with that history when Temporal suggests it. The model is the documented string
form (``openai:...``, the Responses API); its endpoint and key come from the worker's
``OPENAI_BASE_URL`` / ``OPENAI_API_KEY``, which point it at the provider simulator.

Imported only by the worker process (``benchmarks.peers_worker``): building the agent
needs those variables.
"""

from __future__ import annotations

from pydantic_ai import Agent
from pydantic_ai.durable_exec.temporal import PydanticAIWorkflow, TemporalDurability
from pydantic_ai.messages import ModelMessage
from temporalio import workflow

__all__ = ["WORKFLOW", "PydanticAIChat", "agent"]

WORKFLOW = "PeersPydanticAIChat"
INSTRUCTIONS = "You are a friendly companion in a long conversation. Reply briefly."

agent = Agent(
    "openai:gpt-5.6-sol",
    name="companion",
    instructions=INSTRUCTIONS,
    capabilities=[TemporalDurability()],
)


@workflow.defn(name=WORKFLOW)
class PydanticAIChat(PydanticAIWorkflow):
    __pydantic_ai_agents__ = [agent]  # noqa: RUF012 (the documented class attribute)

    @workflow.init
    def __init__(self, history: list[ModelMessage] | None = None) -> None:
        self.history: list[ModelMessage] = list(history or [])

    @workflow.run
    async def run(self, history: list[ModelMessage] | None = None) -> None:
        await workflow.wait_condition(
            lambda: (
                workflow.info().is_continue_as_new_suggested() and workflow.all_handlers_finished()
            )
        )
        workflow.continue_as_new(self.history)

    @workflow.update
    async def chat(self, prompt: str) -> str:
        result = await agent.run(prompt, message_history=self.history)
        self.history = result.all_messages()
        return result.output
