"""session_search tool: scoped to the caller's chat whatever the arguments say, JSON results, refusals."""
from __future__ import annotations

import json

import pytest

from agent.messages import assistant, user
from agent.store import SessionStore
from agent.tools.base import ToolContext
from agent.tools.session_search import SessionSearchTool


@pytest.fixture
def tool(store: SessionStore) -> SessionSearchTool:
    mine = store.ensure_session("web:mine", platform="web", chat_id="mine")
    store.append(mine.id, [user("what port does staging use?"), assistant("staging listens on 8443"), user("thanks")])
    other = store.ensure_session("web:other", platform="web", chat_id="other")
    store.append(other.id, [user("the staging password is swordfish")])
    return SessionSearchTool(store)


async def test_results_are_the_callers_chat_only(tool: SessionSearchTool) -> None:
    """Searching 'staging' from chat mine returns mine's two messages with context, never chat other's."""
    result = json.loads(await tool({"query": "staging"}, ToolContext(chat_id="mine", session_id="x")))
    snippets = sorted(r["snippet"] for r in result["results"])
    assert (result["success"], snippets) == (True, ["staging listens on 8443".replace("staging", "**staging**"),
                                                   "what port does **staging** use?"])
    top = next(r for r in result["results"] if r["message"] == 1)
    assert [c["text"] for c in top["context"]] == ["what port does staging use?", "thanks"]


@pytest.mark.parametrize(
    "query",
    ['swordfish', 'chat_id:other swordfish', 'swordfish OR staging', '"swordfish"', 'sword*', 'NEAR(staging swordfish)',
     'chat_tag:* OR swordfish', "staging') OR 1=1 --"],
)
async def test_operator_tricks_cannot_reach_another_chat(tool: SessionSearchTool, query: str) -> None:
    """Column filters, OR, quotes, prefix stars and NEAR in the query never surface chat other's password."""
    raw = await tool({"query": query}, ToolContext(chat_id="mine", session_id="x"))
    assert json.loads(raw)["success"] is True
    assert "swordfish" not in raw.replace(query.replace('"', '\\"'), "")


async def test_chat_argument_from_the_model_is_ignored(tool: SessionSearchTool) -> None:
    """A 'chat_id' argument the model invents does not change the scope."""
    raw = await tool({"query": "password", "chat_id": "other"}, ToolContext(chat_id="mine", session_id="x"))
    assert json.loads(raw)["results"] == []


@pytest.mark.parametrize(
    ("arguments", "fragment"),
    [({}, "give 'query'"), ({"query": "  "}, "give 'query'"), ({"query": "x", "limit": "many"}, "'limit' must be")],
)
async def test_bad_arguments_are_refused(tool: SessionSearchTool, arguments: dict[str, object], fragment: str) -> None:
    """Missing query or a non-numeric limit is a refusal that says what to give."""
    result = json.loads(await tool(arguments, ToolContext(chat_id="mine", session_id="x")))
    assert (result["success"], fragment in result["error"]) == (False, True)


async def test_limit_caps_the_results(tool: SessionSearchTool) -> None:
    """limit=1 returns one message."""
    result = json.loads(await tool({"query": "staging", "limit": 1}, ToolContext(chat_id="mine", session_id="x")))
    assert len(result["results"]) == 1


def test_schema_is_the_public_contract(tool: SessionSearchTool) -> None:
    """Name session_search, required query, optional limit (docs/contract.md §5.3)."""
    params = tool.schema.parameters
    assert (tool.schema.name, params["required"], sorted(params["properties"])) == ("session_search", ["query"], ["limit", "query"])
