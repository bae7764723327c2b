"""The chat commands: one `CommandSpec` each, in the order the platforms' menus show them.

Owns `COMMANDS` and the handlers small enough to read beside their spec; a
larger handler lives in a module of its own (`chat.py`: `/model` `/usage`
`/undo`). To add a command, add its spec here and its handler (see
docs/architecture.md, "Adding a chat command").
"""
from __future__ import annotations

from gateway.chats.whoami import whoami_text
from gateway.commands.calls import CommandCall, SessionCall
from gateway.commands.spec import CommandSpec, CommandTable, Immediate, Queued
from gateway.commands.status import render_status
from gateway.i18n import Phrase, as_is, joined, msgid, say, say_n


async def new(call: CommandCall) -> Phrase:
    await call.host.new_session(call.route)
    return say(call.language, "new.done")


async def compress(call: SessionCall) -> None:
    result = await call.jobs.compress(call.job, call.agent)
    if result.changed:
        text = say(call.language, "compress.finished", before=result.tokens_before, after=result.tokens_after)
    else:
        text = say(call.language, "compress.nothing", reason=result.reason or result.outcome)
    await call.jobs.reply(call.job, text)


async def status(call: CommandCall) -> Phrase:
    return render_status(await call.host.status(call.route), call.language)


async def memory(call: CommandCall) -> Phrase:
    notes = await call.host.notes(call.route)
    if notes is None:
        return say(call.language, "notes.off")
    return as_is(notes) if notes else say(call.language, "notes.empty")  # the notes are data, not our words


async def retry(call: SessionCall) -> None:
    await call.jobs.turn(call.job, call.agent, retry=True, lock_wait=call.lock_wait)


async def stop(call: CommandCall) -> Phrase:
    text = say(call.language, "stop.stopped" if call.host.stop_running(call.route) else "stop.nothing")
    if queued := call.host.queued(call.route):
        return joined([text, say_n(call.language, "stop.still_queued", queued)], " ")
    return text


async def approve(call: CommandCall) -> Phrase:
    return await _approval_answer(call, approve=True)


async def deny(call: CommandCall) -> Phrase:
    return await _approval_answer(call, approve=False)


async def _approval_answer(call: CommandCall, *, approve: bool) -> Phrase:
    desk = call.host.approvals
    if desk is None:
        return say(call.language, "command.not_here", name=call.command.name)
    return await desk.answer(call.message, call.route.chat_scope, approve=approve, args=call.command.args,
                             language=call.language)


async def whoami(call: CommandCall) -> Phrase:
    return whoami_text(call.message, admins=call.host.admins(call.message.platform), language=call.language)


async def forget(call: CommandCall) -> Phrase:
    admin = call.message.user_id in call.host.admins(call.message.platform)
    text = await call.host.forget(call.route, call.message.user_id, call.command.args, admin=admin,
                                  language=call.language)
    return say(call.language, "notes.off") if text is None else text


async def schedules(call: CommandCall) -> Phrase:
    desk = call.host.schedules
    if desk is None:
        return say(call.language, "command.not_here", name="schedules")
    return await desk.listing(call.route.chat_scope, call.language)


async def unschedule(call: CommandCall) -> Phrase:
    desk = call.host.schedules
    if desk is None:
        return say(call.language, "command.not_here", name="unschedule")
    admin = call.message.user_id in call.host.admins(call.message.platform)
    return await desk.unschedule(call.route.chat_scope, call.command.args, user_id=call.message.user_id, admin=admin,
                                 language=call.language)


async def help_list(call: CommandCall) -> Phrase:
    return COMMANDS.help_text(call.language)


async def usage(call: CommandCall) -> Phrase:
    chats = call.host.chats
    return say(call.language, "command.not_here", name="usage") if chats is None else await chats.usage(call)


async def model(call: CommandCall) -> Phrase:
    chats = call.host.chats
    return say(call.language, "command.not_here", name="model") if chats is None else await chats.model(call)


async def undo(call: CommandCall) -> Phrase:
    chats = call.host.chats
    return say(call.language, "command.not_here", name="undo") if chats is None else await chats.undo(call)


COMMANDS = CommandTable((
    CommandSpec("new", msgid("command.new.description"), Immediate(new), who="admin", aliases=("reset",),
                help=msgid("command.new.help"), changes_history=True),
    CommandSpec("compress", msgid("command.compress.description"), Queued(compress), who="admin",
                help=msgid("command.compress.help")),
    CommandSpec("status", msgid("command.status.description"), Immediate(status),
                help=msgid("command.status.help")),
    CommandSpec("usage", msgid("command.usage.description"), Immediate(usage),
                help=msgid("command.usage.help")),
    CommandSpec("model", msgid("command.model.description"), Immediate(model), who="admin_to_change",
                usage="[NAME]", help=msgid("command.model.help")),
    CommandSpec("undo", msgid("command.undo.description"), Immediate(undo),
                help=msgid("command.undo.help"), changes_history=True),
    CommandSpec("retry", msgid("command.retry.description"), Queued(retry),
                help=msgid("command.retry.help")),
    CommandSpec("memory", msgid("command.memory.description"), Immediate(memory),
                help=msgid("command.memory.help")),
    CommandSpec("stop", msgid("command.stop.description"), Immediate(stop), help=msgid("command.stop.help")),
    CommandSpec("whoami", msgid("command.whoami.description"), Immediate(whoami),
                help=msgid("command.whoami.help")),
    CommandSpec("forget", msgid("command.forget.description"), Immediate(forget), usage="TEXT",
                help=msgid("command.forget.help")),
    CommandSpec("approve", msgid("command.approve.description"), Immediate(approve), usage="ID",
                help=msgid("command.approve.help")),
    CommandSpec("deny", msgid("command.deny.description"), Immediate(deny), usage="ID",
                help=msgid("command.deny.help")),
    CommandSpec("schedules", msgid("command.schedules.description"), Immediate(schedules),
                help=msgid("command.schedules.help")),
    CommandSpec("unschedule", msgid("command.unschedule.description"), Immediate(unschedule), usage="ID",
                help=msgid("command.unschedule.help")),
    CommandSpec("help", msgid("command.help.description"), Immediate(help_list), help=msgid("command.help.help")),
))


__all__ = ["COMMANDS"]
