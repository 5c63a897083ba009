"""Wiring only: the nodes, and the one static edge START -> agent. Every node routes itself with
`Command(goto=...)`; its `Command[Literal[...]]` annotation is what LangGraph draws."""

from __future__ import annotations

from langgraph.graph import START, StateGraph

from browser_copilot.agent.context import AgentContext
from browser_copilot.agent.nodes.agent import agent
from browser_copilot.agent.nodes.critical_action_validator import critical_action_validator
from browser_copilot.agent.nodes.goal_validator import goal_validator
from browser_copilot.agent.nodes.human_in_loop import human_in_loop
from browser_copilot.agent.nodes.memory_manager import memory_manager
from browser_copilot.agent.nodes.observe import observe
from browser_copilot.agent.nodes.progress_analyzer import progress_analyzer
from browser_copilot.agent.nodes.progress_reporter import progress_reporter
from browser_copilot.agent.nodes.quality_evaluator import quality_evaluator
from browser_copilot.agent.nodes.self_corrector import self_corrector
from browser_copilot.agent.nodes.strategy_adapter import strategy_adapter
from browser_copilot.agent.nodes.tools import tools
from browser_copilot.agent.state import AgentState

NODES = (
    agent,
    observe,
    tools,
    critical_action_validator,
    human_in_loop,
    goal_validator,
    quality_evaluator,
    progress_analyzer,
    strategy_adapter,
    self_corrector,
    progress_reporter,
    memory_manager,
)


def build_graph() -> StateGraph[AgentState, AgentContext, AgentState, AgentState]:
    """The uncompiled graph: the caller picks the checkpointer (SQLite in the app, memory in tests)."""
    builder = StateGraph(AgentState, context_schema=AgentContext)
    for node in NODES:
        builder.add_node(node.__name__, node)
    builder.add_edge(START, "agent")
    return builder


def mermaid() -> str:
    """The graph drawn from the code (`main.py graph`)."""
    return build_graph().compile().get_graph().draw_mermaid()
