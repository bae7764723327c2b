"""The chat commands are one table: the parser, the admin gate, /help and the menus all follow its specs."""
from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from adapters.base import InboundMessage
from gateway.commands.calls import CommandCall, SessionCall
from gateway.commands.spec import Command, CommandSpec, CommandTable, Immediate, Queued
from gateway.commands.table import COMMANDS
from gateway.i18n import say
from gateway.intake.decide import IntakeDecision
from gateway.intake.routing import route
from gateway.intake.triggers import decide_trigger


def _msg(text: str, *, chat_type: str = "group", user_id: str = "7") -> InboundMessage:
    return InboundMessage(platform="telegram", chat_id="-100" if chat_type == "group" else user_id,
                          chat_type=chat_type, user_id=user_id, user_name="Ann", text=text,  # type: ignore[arg-type]
                          message_id="1", timestamp=0.0)


async def _echo(call: CommandCall) -> str:
    return call.command.args


async def _later(call: SessionCall) -> None:
    return None


def _table(*extra: CommandSpec) -> CommandTable:
    return CommandTable((
        CommandSpec("ping", "Answer pong", Immediate(_echo), aliases=("p",), usage="[TEXT]", help="say pong"),
        CommandSpec("wipe", "Wipe the chat", Queued(_later), who="admin"),
        *extra,
    ))


def test_one_spec_gives_the_parser_help_and_menu_entry() -> None:
    """A command declared once is parsed (by name and alias), listed in /help and in every platform's menu."""
    table = _table(CommandSpec("echo", "Say it back", Immediate(_echo)))
    assert table.parse("/echo hi there") == Command("echo", "hi there")
    assert table.parse("/P@bot now") == Command("ping", "now")
    assert table.parse("/nope") is None and table.parse("say /echo") is None
    assert table.help_text("en").splitlines() == [
        "Commands:", "/ping or /p [TEXT] — say pong", "/wipe — Wipe the chat", "/echo — Say it back",
    ]
    assert [(entry.name, entry.description) for entry in table.menu] == [
        ("ping", "Answer pong"), ("wipe", "Wipe the chat"), ("echo", "Say it back"),
    ]
    assert [entry["command"] for entry in table.slack_slash_commands()] == ["/ping", "/wipe", "/echo"]
    assert table.slack_slash_commands("https://bot.example/slack/events")[0] == {
        "command": "/ping", "description": "Answer pong", "should_escape": False, "usage_hint": "[TEXT]",
        "url": "https://bot.example/slack/events",
    }


def test_a_name_declared_twice_or_a_bad_spec_is_refused() -> None:
    with pytest.raises(ValueError, match="/p is declared twice"):
        _table(CommandSpec("other", "Other", Immediate(_echo), aliases=("p",)))
    with pytest.raises(ValueError, match="description"):
        CommandSpec("long", "x" * 101, Immediate(_echo))
    with pytest.raises(ValueError, match="lower-case"):
        CommandSpec("Shout", "Loud", Immediate(_echo))


@pytest.mark.parametrize(
    ("text", "chat_type", "user_id", "admins", "refused"),
    [
        ("/new", "group", "7", {"1"}, True),  # a member, not an admin
        ("/new", "group", "1", {"1"}, False),  # the admin
        ("/new", "dm", "7", {"1"}, False),  # admins are a group rule
        ("/new", "group", "7", set(), False),  # no admins configured: everyone
        ("/compress", "group", "7", {"1"}, True),
        ("/model", "group", "7", {"1"}, False),  # showing the model changes nothing
        ("/model big", "group", "7", {"1"}, True),
        ("/status", "group", "7", {"1"}, False),
    ],
)
def test_the_admin_gate_follows_each_specs_who(
    text: str, chat_type: str, user_id: str, admins: set[str], refused: bool
) -> None:
    command = COMMANDS.parse(text)
    assert command is not None
    refusal = COMMANDS.spec(command).refusal(command, _msg(text, chat_type=chat_type, user_id=user_id),
                                             frozenset(admins), "en")
    assert refusal == (say("en", "command.admin_only", name=command.name) if refused else None)


@pytest.mark.parametrize(("text", "kind"), [("/compress", "command"), ("/retry", "command"), ("/status", None),
                                            ("/new", None), ("hello", "turn")])
def test_queued_commands_are_jobs_of_their_own_kind(text: str, kind: str | None) -> None:
    """/compress and /retry join the lane as `command` jobs (not `compress`); immediate ones never do."""
    message = _msg(text, chat_type="dm")
    trigger = decide_trigger(message, group_trigger="mention", require_mention=True, record_unmentioned=False)
    where = route(message, profile="p", group_sessions_per_user=False)
    assert IntakeDecision(trigger.action, trigger.reason, message, route=where, trigger=trigger).lane_job == kind


def test_the_gateways_table_lists_every_command_once() -> None:
    """/help names every command and alias; the menus hold each command once, in the table's order."""
    help_lines = COMMANDS.help_text("en").splitlines()[1:]
    assert [line.split()[0] for line in help_lines] == [f"/{spec.name}" for spec in COMMANDS]
    assert help_lines[0].startswith("/new or /reset — ")
    assert [spec.name for spec in COMMANDS if not spec.immediate] == ["compress", "retry"]
    assert {spec.name for spec in COMMANDS if spec.who != "anyone"} == {"new", "compress", "model"}


def test_the_slack_manifest_in_the_repo_lists_the_tables_commands() -> None:
    """deploy/slack-manifest.yaml declares exactly the table's slash commands (Slack learns them only from it)."""
    manifest = yaml.safe_load((Path(__file__).resolve().parents[2] / "deploy" / "slack-manifest.yaml").read_text())
    assert manifest["features"]["slash_commands"] == COMMANDS.slack_slash_commands()
    assert "commands" in manifest["oauth_config"]["scopes"]["bot"]
