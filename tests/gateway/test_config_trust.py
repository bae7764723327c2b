"""The config keys of the listeners and of attachment fetching: defaults, and errors naming the key."""
from __future__ import annotations

import pytest

from adapters.slack import SlackAdapter
from chorus_errors import ConfigError
from gateway.build import listener_limits
from gateway.config import parse_config
from gateway.platforms.slack import build_slack


def test_defaults_are_the_contracts() -> None:
    config = parse_config({})
    assert (config.gateway.read_timeout_seconds, config.gateway.max_connections) == (30.0, 2000)
    assert config.platforms.slack.file_hosts == ["https://files.slack.com"]
    limits = listener_limits(parse_config({"gateway": {"read_timeout_seconds": 5, "max_connections": 10}}))
    assert (limits.read_timeout_seconds, limits.max_connections) == (5.0, 10)


@pytest.mark.parametrize("entry", ["files.slack.com", "ftp://files.slack.com", "https://files.slack.com/files-pri/",
                                   "https://user@files.slack.com", "https://"])
def test_a_file_host_that_is_not_an_origin_is_refused_by_name(entry: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_config({"platforms": {"slack": {"file_hosts": [entry]}}})
    assert "platforms.slack.file_hosts" in str(caught.value) and "not an origin" in str(caught.value)


@pytest.mark.parametrize(("key", "value"), [("read_timeout_seconds", 0), ("max_connections", 0)])
def test_listener_limits_must_be_positive(key: str, value: int) -> None:
    with pytest.raises(ConfigError, match=f"gateway.{key}"):
        parse_config({"gateway": {key: value}})


def test_the_configured_file_hosts_reach_the_slack_adapter() -> None:
    """build_slack hands file_hosts on: the policy allows exactly them (the default one address-checked)."""
    config = parse_config({"platforms": {"slack": {
        "enabled": True, "bot_token": "xoxb-1", "signing_secret": "s",
        "file_hosts": ["https://files.slack.com", "http://127.0.0.1:9999"],
    }}})
    adapter = build_slack(config.platforms.slack)
    assert isinstance(adapter, SlackAdapter)
    allowed = {(str(entry.origin), entry.configured) for entry in adapter._files.policy.allowed}
    assert allowed == {("https://files.slack.com", False), ("http://127.0.0.1:9999", True)}
