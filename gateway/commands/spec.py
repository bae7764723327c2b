"""A chat command as one record, and the table every view of the commands is derived from.

Owns `CommandSpec` (name, description, who may run it, immediate or queued,
handler), `Command` (a parsed `/name args`) and `CommandTable`, which derives
from its specs the parser, the admin gate, the `/help` text and the entries of
the platforms' menus (Telegram's setMyCommands, Discord's slash commands, the
`features.slash_commands` of a Slack app manifest). An `Immediate` handler
answers at once, even while the session is busy; a `Queued` one runs on the
session's lane under its lock, after the jobs ahead of it. Pure: the handlers
reach the gateway only through the call they are given.
"""
from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, TypeAlias

from adapters.base import BotCommand, InboundMessage
from gateway.i18n import LANGUAGES, Phrase, joined, say

if TYPE_CHECKING:
    from gateway.commands.calls import CommandCall, SessionCall

# anyone; admin: in groups with `platforms.<p>.admins` set, only those users; admin_to_change: anyone may run it
# bare (it only shows), only admins with arguments (it changes something).
Who: TypeAlias = Literal["anyone", "admin", "admin_to_change"]
MENU_DESCRIPTION_LIMIT = 100  # Discord's limit, the smallest of the platforms' (Telegram 256, Slack 2000)


@dataclass(frozen=True, slots=True)
class Immediate:
    """Answered at once, even while the session is busy: the handler returns the one reply."""

    handler: Callable[[CommandCall], Awaitable[Phrase]]


@dataclass(frozen=True, slots=True)
class Queued:
    """A job of kind `"command"` on the session's lane: the handler runs under the session lock and replies itself."""

    handler: Callable[[SessionCall], Awaitable[None]]


@dataclass(frozen=True, slots=True)
class CommandSpec:
    """One chat command.

    Args:
        name: what follows the `/` (lower case).
        description: the msgid of its line in the platforms' menus (at most `MENU_DESCRIPTION_LIMIT` characters
            in every language; `msgid("command.NAME.description")`).
        run: `Immediate(handler)` or `Queued(handler)`.
        who: who may run it in a group with admins (`Who`).
        aliases: other names parsed as this command (`/reset` is `/new`); not in the menus.
        usage: what follows the name in `/help` (`[NAME]`).
        help: the msgid of its `/help` line when it says more than `description`.
        changes_history: it rewrites the stored conversation (`/undo`, `/new`): pages showing it redraw it.
    """

    name: str
    description: str
    run: Immediate | Queued
    who: Who = "anyone"
    aliases: tuple[str, ...] = ()
    usage: str = ""
    help: str = ""
    changes_history: bool = False

    def __post_init__(self) -> None:
        if not self.name.isascii() or not self.name.islower() or " " in self.name:
            raise ValueError(f"command name {self.name!r}: expected one lower-case ASCII word")
        for language in LANGUAGES:
            if not 0 < len(self.describe(language)) <= MENU_DESCRIPTION_LIMIT:
                raise ValueError(f"/{self.name}: the {language} description must be 1-{MENU_DESCRIPTION_LIMIT} characters")

    @property
    def immediate(self) -> bool:
        return isinstance(self.run, Immediate)

    def describe(self, language: str) -> Phrase:
        """Its menu line in `language`."""
        return say(language, self.description)

    def refusal(self, command: Command, message: InboundMessage, admins: frozenset[str],
                language: str) -> Phrase | None:
        """The one-line refusal when a non-admin runs an admin command in a group (None: allowed)."""
        if self.who == "anyone" or message.chat_type != "group" or not admins or message.user_id in admins:
            return None
        if self.who == "admin_to_change" and not command.args:
            return None
        return say(language, "command.admin_only", name=self.name)

    def help_line(self, language: str) -> Phrase:
        names = say(language, "help.or").join(f"/{name}" for name in (self.name, *self.aliases))
        usage = f" {self.usage}" if self.usage else ""
        return say(language, "help.line", names=names, usage=usage, help=say(language, self.help or self.description))


@dataclass(frozen=True, slots=True)
class Command:
    """A parsed `/name args` (`name` is the spec's name, an alias resolved)."""

    name: str
    args: str = ""


class CommandTable:
    """The chat commands, in menu order; every view of them is derived here, once, at construction."""

    def __init__(self, specs: Iterable[CommandSpec]) -> None:
        self.specs = tuple(specs)
        by_name: dict[str, CommandSpec] = {}
        for spec in self.specs:
            for name in (spec.name, *spec.aliases):
                if name in by_name:
                    raise ValueError(f"/{name} is declared twice")
                by_name[name] = spec
        self._by_name = by_name
        self.menu = tuple(
            BotCommand(spec.name, spec.describe("en"),
                       translations=tuple((language, spec.describe(language)) for language in LANGUAGES if language != "en"))
            for spec in self.specs
        )

    def help_text(self, language: str) -> Phrase:
        """`/help` in `language`: a title, then one line per command."""
        return joined([say(language, "help.title"), *(spec.help_line(language) for spec in self.specs)])

    def __iter__(self) -> Iterator[CommandSpec]:
        return iter(self.specs)

    def __getitem__(self, name: str) -> CommandSpec:
        return self._by_name[name]

    @property
    def names(self) -> frozenset[str]:
        """Every name parsed as a command, aliases included."""
        return frozenset(self._by_name)

    def parse(self, text: str) -> Command | None:
        """`/name args` for a known command; `/name@bot` is accepted too. Anything else is None."""
        stripped = text.strip()
        if not stripped.startswith("/"):
            return None
        head, _, rest = stripped[1:].partition(" ")
        spec = self._by_name.get(head.split("@", 1)[0].lower())
        if spec is None:
            return None
        return Command(name=spec.name, args=rest.strip())

    def spec(self, command: Command) -> CommandSpec:
        return self._by_name[command.name]

    def slack_slash_commands(self, request_url: str | None = None) -> list[dict[str, Any]]:
        """The `features.slash_commands` of a Slack app manifest (`request_url` is needed in events mode)."""
        return [
            {"command": f"/{spec.name}", "description": spec.describe("en"), "should_escape": False}
            | ({"usage_hint": spec.usage} if spec.usage else {})
            | ({"url": request_url} if request_url else {})
            for spec in self.specs
        ]


__all__ = [
    "Command", "CommandSpec", "CommandTable", "Immediate", "Queued", "Who",
]
