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

NEW_TEXT = "Started a new conversation. My notes about this chat are kept; /memory shows them."
NOTES_OFF_TEXT = "notes are turned off here."
NOT_HERE_TEXT = "/{name} is not available here."  # no chat store


async def new(call: CommandCall) -> str:
    await call.host.new_session(call.route)
    return NEW_TEXT


async def compress(call: SessionCall) -> None:
    result = await call.jobs.compress(call.job, call.agent)
    if result.changed:
        text = f"context compressed: {result.tokens_before:,} → {result.tokens_after:,} tokens"
    else:
        text = f"nothing compressed ({result.reason or result.outcome})"
    await call.jobs.reply(call.job, text)


async def status(call: CommandCall) -> str:
    return render_status(await call.host.status(call.route))


async def memory(call: CommandCall) -> str:
    notes = await call.host.notes(call.route)
    return NOTES_OFF_TEXT if notes is None else notes


async def retry(call: SessionCall) -> None:
    await call.jobs.turn(call.job, call.agent, retry=True, lock_wait=call.lock_wait)


async def stop(call: CommandCall) -> str:
    text = "stopped." if call.host.stop_running(call.route) else "nothing to stop."
    if queued := call.host.queued(call.route):
        text += f" {queued} queued message(s) will still be answered."
    return text


async def approve(call: CommandCall) -> str:
    return await _approval_answer(call, approve=True)


async def deny(call: CommandCall) -> str:
    return await _approval_answer(call, approve=False)


async def _approval_answer(call: CommandCall, *, approve: bool) -> str:
    desk = call.host.approvals
    if desk is None:
        return NOT_HERE_TEXT.format(name=call.command.name)
    return await desk.answer(call.message, call.route.chat_scope, approve=approve, args=call.command.args)


async def whoami(call: CommandCall) -> str:
    return whoami_text(call.message, admins=call.host.admins(call.message.platform))


async def forget(call: CommandCall) -> str:
    admin = call.message.user_id in call.host.admins(call.message.platform)
    text = await call.host.forget(call.route, call.message.user_id, call.command.args, admin=admin)
    return NOTES_OFF_TEXT if text is None else text


async def schedules(call: CommandCall) -> str:
    desk = call.host.schedules
    return NOT_HERE_TEXT.format(name="schedules") if desk is None else await desk.listing(call.route.chat_scope)


async def unschedule(call: CommandCall) -> str:
    desk = call.host.schedules
    if desk is None:
        return NOT_HERE_TEXT.format(name="unschedule")
    admin = call.message.user_id in call.host.admins(call.message.platform)
    return await desk.unschedule(call.route.chat_scope, call.command.args, user_id=call.message.user_id, admin=admin)


async def help_list(call: CommandCall) -> str:
    return COMMANDS.help_text


async def usage(call: CommandCall) -> str:
    chats = call.host.chats
    return NOT_HERE_TEXT.format(name="usage") if chats is None else await chats.usage(call)


async def model(call: CommandCall) -> str:
    chats = call.host.chats
    return NOT_HERE_TEXT.format(name="model") if chats is None else await chats.model(call)


async def undo(call: CommandCall) -> str:
    chats = call.host.chats
    return NOT_HERE_TEXT.format(name="undo") if chats is None else await chats.undo(call)


COMMANDS = CommandTable((
    CommandSpec("new", "Start a new conversation (notes are kept)", Immediate(new), who="admin", aliases=("reset",),
                help="start a new conversation (notes are kept)"),
    CommandSpec("compress", "Compress this conversation's context now", Queued(compress), who="admin",
                help="compress this conversation's context now"),
    CommandSpec("status", "Tokens used, threshold, model and prompt", Immediate(status),
                help="tokens used, compression threshold, compressions so far"),
    CommandSpec("usage", "Tokens used, and what is left of the limits", Immediate(usage),
                help="tokens used by this conversation and this chat, and what is left of each limit"),
    CommandSpec("model", "Show or switch this chat's model", Immediate(model), who="admin_to_change",
                usage="[NAME]", help="show this chat's model, or switch to another allowed one"),
    CommandSpec("undo", "Remove the last exchange", Immediate(undo),
                help="remove the last exchange from this conversation"),
    CommandSpec("retry", "Run your last message again", Queued(retry),
                help="run your last message again (after a failed answer)"),
    CommandSpec("memory", "Show my notes for this chat", Immediate(memory),
                help="show what I keep in my notes for this chat"),
    CommandSpec("stop", "Stop the reply in progress", Immediate(stop), help="stop the reply in progress"),
    CommandSpec("whoami", "Your platform id and admin status", Immediate(whoami),
                help="your platform id, and whether you are an admin here"),
    CommandSpec("forget", "Remove my notes that contain a text", Immediate(forget), usage="TEXT",
                help="remove my notes that contain TEXT (in a group: your own)"),
    CommandSpec("approve", "Let a tool call that waits for your yes run", Immediate(approve), usage="ID",
                help="let the tool call ID run (it waits for a yes from the person allowed to give it)"),
    CommandSpec("deny", "Refuse a tool call that waits for your yes", Immediate(deny), usage="ID",
                help="refuse the tool call ID"),
    CommandSpec("schedules", "List this chat's scheduled jobs", Immediate(schedules),
                help="this chat's scheduled jobs: id, when, next and last run"),
    CommandSpec("unschedule", "Remove a scheduled job", Immediate(unschedule), usage="ID",
                help="remove the scheduled job ID (its creator or an admin)"),
    CommandSpec("help", "List the commands", Immediate(help_list), help="this list"),
))


__all__ = ["COMMANDS", "NEW_TEXT"]
