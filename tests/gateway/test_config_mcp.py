"""The MCP keys of the config: one transport per server, valid names, clear errors."""
from __future__ import annotations

import pytest

from chorus_errors import ConfigError
from gateway.config import parse_config


def test_a_server_needs_exactly_one_transport() -> None:
    """A server with neither or both of command and url is refused, naming it."""
    with pytest.raises(ConfigError) as both:
        parse_config({"mcp": {"servers": {"s": {"command": ["x"], "url": "http://127.0.0.1:1/mcp"}}}}, env={})
    assert "mcp.servers" in str(both.value) and "needs exactly one of command (stdio) or url" in str(both.value)
    with pytest.raises(ConfigError):
        parse_config({"mcp": {"servers": {"s": {"env": {"A": "1"}}}}}, env={})


def test_server_names_must_make_valid_tool_names() -> None:
    """A name with a dot or a space is refused with what is allowed."""
    with pytest.raises(ConfigError) as bad:
        parse_config({"mcp": {"servers": {"my.server": {"command": ["x"]}}}}, env={})
    assert "may use only letters, digits, '_' and '-'" in str(bad.value)


def test_tool_keys_load() -> None:
    """group_tools, chats.*.tools, tool_progress and prune_exclude_tools are read as written."""
    config = parse_config({
        "mcp": {"servers": {"web": {"url": "http://127.0.0.1:1/mcp", "headers": {"X": "y"}}}, "group_tools": ["web"]},
        "chats": {"telegram:-1": {"tools": ["web__search"]}},
        "tool_progress": {"dms": "all", "groups": "new"},
        "compression": {"prune_exclude_tools": ["notes__recall"]},
    }, env={})
    assert config.mcp.group_tools == ["web"]
    assert config.chats["telegram:-1"].tools == ["web__search"]
    assert (config.tool_progress.dms, config.tool_progress.groups) == ("all", "new")
    assert config.compression.prune_exclude_tools == ["notes__recall"]
