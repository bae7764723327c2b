"""The tool-progress line: the tool, a short argument summary, secrets masked."""
from __future__ import annotations

import json

import pytest

from agent.messages import ToolCall
from gateway.delivery.tool_progress import describe_call


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        ({"query": "oslo weather", "limit": 3}, "🔧 web__search(query=oslo weather, limit=3)"),
        ({"api_key": "sk-1", "password": "p", "Authorization": "Bearer x", "author": "ann"},
         "🔧 web__search(api_key=***, password=***, Authorization=***, author=ann)"),
        ({"headers": {"X-Api-Token": "t", "accept": "json"}}, '🔧 web__search(headers={"X-Api-Token": "***", "accept": "json"})'),
        ({"text": "y" * 300}, "🔧 web__search(text=" + "y" * 39 + "…)"),
    ],
)
def test_progress_lines_are_short_and_never_show_secrets(arguments: dict[str, object], expected: str) -> None:
    """Values are shortened; arguments named like keys, tokens or passwords are masked at any depth."""
    assert describe_call(ToolCall("c", "web__search", json.dumps(arguments))) == expected


def test_unparseable_arguments_are_not_shown() -> None:
    """Arguments that are not a JSON object are never echoed."""
    assert describe_call(ToolCall("c", "t", "not json sk-secret")) == "🔧 t(…)"
