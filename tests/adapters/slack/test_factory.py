"""`build_slack`: config section → adapter, with missing secrets named by key."""
from __future__ import annotations

import pytest

from chorus_errors import ConfigError
from gateway.config import SlackSettings
from gateway.platforms.slack import build_slack
from tests.fakes.slack_api import FakeSlack


async def test_events_mode_builds_an_adapter_that_probes(fake_slack: FakeSlack) -> None:
    """A complete events-mode section builds an adapter mounted at its path that reaches the API."""
    settings = SlackSettings.model_validate({"enabled": True, "bot_token": "xoxb-fake-bot-token",
                                             "signing_secret": "s", "api_base_url": fake_slack.api_base_url,
                                             "path": "/hooks/slack"})
    adapter = build_slack(settings)
    assert [route.path for route in adapter.routes()] == ["/hooks/slack"]
    assert (await adapter.probe()).ok is True


@pytest.mark.parametrize(
    ("section", "key"),
    [
        ({"signing_secret": "s"}, "platforms.slack.bot_token"),
        ({"bot_token": "xoxb-1"}, "platforms.slack.signing_secret"),
        ({"bot_token": "xoxb-1", "mode": "socket"}, "platforms.slack.app_token"),
    ],
)
def test_missing_secret_names_the_key(section: dict[str, str], key: str) -> None:
    """Each missing secret raises ConfigError naming the key to set."""
    with pytest.raises(ConfigError) as caught:
        build_slack(SlackSettings.model_validate(section))
    assert caught.value.key == key
    assert key in str(caught.value)


def test_socket_mode_has_no_routes() -> None:
    """A socket-mode adapter mounts nothing on the gateway's HTTP server."""
    settings = SlackSettings.model_validate({"bot_token": "xoxb-1", "app_token": "xapp-1", "mode": "socket"})
    assert build_slack(settings).routes() == []
