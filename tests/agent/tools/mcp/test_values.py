"""Pure parts of the MCP client: public names, the result cut, schema checks, allowlists."""
from __future__ import annotations

import re

import pytest

from agent.tools.mcp import allowed, cut_middle, public_name
from agent.tools.mcp.tool import _validator, offered_parameters, schema_problem

OPENAI_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")


@pytest.mark.parametrize(
    ("server", "tool", "expected"),
    [("files", "read", "files__read"), ("gh", "list-issues", "gh__list-issues")],
)
def test_plain_names_are_server_double_underscore_tool(server: str, tool: str, expected: str) -> None:
    """A name that is already valid is kept as `server__tool`."""
    assert public_name(server, tool) == expected


@pytest.mark.parametrize("tool", ["read.file", "ünïcode tool", "x" * 200, "a/b:c"])
def test_every_name_becomes_a_valid_openai_function_name(tool: str) -> None:
    """Invalid characters and long names still give a valid, distinct name."""
    name = public_name("srv", tool)
    assert OPENAI_NAME.match(name)
    assert name != public_name("srv", tool + "2")


def test_cut_keeps_head_and_tail_within_the_limit() -> None:
    """A long result keeps its start and end around a marker counting what was cut."""
    text = "A" * 600_000 + "B" * 400_000
    cut = cut_middle(text, 10_000)
    assert len(cut) <= 10_000
    assert cut.startswith("A" * 5000) and cut.endswith("B" * 3000)
    assert "of 1,000,000 chars cut from the middle" in cut
    assert cut_middle("short", 10_000) == "short"


def test_schema_problem_names_the_argument() -> None:
    """A missing or mistyped argument is named; fitting arguments pass."""
    validator = _validator({"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]})
    assert schema_problem(validator, {"n": 3}) is None
    assert schema_problem(validator, {"n": "3"}) == "n: '3' is not of type 'integer'"
    assert schema_problem(validator, {}) == "(top level): 'n' is a required property"


def test_non_object_schemas_are_offered_as_empty_objects() -> None:
    """OpenAI needs an object schema; `$schema` is dropped."""
    assert offered_parameters({"$schema": "x", "type": "object"}) == {"type": "object", "properties": {}}
    assert offered_parameters({"type": "string"}) == {"type": "object", "properties": {}}


def test_allowlist_admits_servers_and_public_names() -> None:
    """An entry is a server name or a `server__tool` name; None admits all."""
    assert allowed("files", "files__read", None)
    assert allowed("files", "files__read", {"files"})
    assert allowed("files", "files__read", {"files__read"})
    assert not allowed("files", "files__read", {"files__write", "web"})
