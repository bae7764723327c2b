"""Pictures, voice and files from Telegram into the model's turn: real PTB, the fake Bot API, the real openai client."""
from __future__ import annotations

import base64
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from gateway.app import Gateway
from gateway.i18n import say
from tests.fakes.images import png
from tests.fakes.openai_server import FakeOpenAI, Reply
from tests.fakes.telegram_api import TOKEN, FakeTelegram, bot_user, group_chat, message, private_chat, user
from tests.gateway.harness import make_config, started

WAIT = 10.0
USER_ID = 777


@asynccontextmanager
async def telegram_gateway(
    tmp_path: Path, fake: FakeOpenAI, tg: FakeTelegram, *, telegram: dict[str, Any] | None = None, **sections: Any
) -> AsyncIterator[Gateway]:
    platforms = {
        "web": {"enabled": False},
        "telegram": {"enabled": True, "token": TOKEN, "base_url": f"http://127.0.0.1:{tg.port}",
                     "allow_all_users": True, **(telegram or {})},
    }
    config = make_config(tmp_path, fake.base_url, platforms=platforms, **sections)
    async with started(config) as gateway:
        yield gateway


@pytest.fixture
async def fake() -> AsyncIterator[FakeOpenAI]:
    async with FakeOpenAI() as server:
        yield server


@pytest.fixture
async def tg() -> AsyncIterator[FakeTelegram]:
    async with FakeTelegram() as server:
        yield server


async def model_request(fake: FakeOpenAI, count: int = 1) -> dict[str, Any]:
    return await fake.wait_for_request(count, timeout=WAIT)


def last_user(request: dict[str, Any]) -> Any:
    return [m for m in request["messages"] if m["role"] == "user"][-1]["content"]


def photo_sizes(small: bytes, large: bytes) -> list[dict[str, Any]]:
    return [
        {"file_id": "small", "file_unique_id": "us", "width": 90, "height": 90, "file_size": len(small)},
        {"file_id": "large", "file_unique_id": "ul", "width": 800, "height": 800, "file_size": len(large)},
    ]


def image_bytes(part: dict[str, Any]) -> bytes:
    assert part["type"] == "image_url"
    url = part["image_url"]["url"]
    head, _, payload = url.partition(",")
    assert head == "data:image/png;base64"
    return base64.b64decode(payload)


async def test_captioned_photo_reaches_the_model_as_an_image_part(
    tmp_path: Path, fake: FakeOpenAI, tg: FakeTelegram
) -> None:
    """The largest photo size is downloaded via getFile and sent byte for byte with the caption as text."""
    small, large = png(2, 2), png(16, 16, (0, 0, 255))
    tg.add_file("small", small)
    tg.add_file("large", large)
    fake.push(Reply(content="A blue square."))
    async with telegram_gateway(tmp_path, fake, tg):
        await tg.push_update(message=message(private_chat(), "", photo=photo_sizes(small, large),
                                             caption="what is this?"))
        content = last_user(await model_request(fake))
        assert await tg.wait_for_text(USER_ID, "A blue square.") == "A blue square."
    assert content[0] == {"type": "text", "text": "what is this?"}
    assert image_bytes(content[1]) == large
    assert tg.downloads == ["photos/large.jpg"]


async def test_photo_without_caption_in_a_dm_is_a_turn(tmp_path: Path, fake: FakeOpenAI, tg: FakeTelegram) -> None:
    """A caption-less photo in a DM is answered; the turn is the image alone."""
    picture = png(4, 4)
    tg.add_file("large", picture)
    tg.add_file("small", picture)
    fake.push(Reply(content="Nice picture."))
    async with telegram_gateway(tmp_path, fake, tg):
        await tg.push_update(message=message(private_chat(), "", photo=photo_sizes(picture, picture)))
        content = last_user(await model_request(fake))
        await tg.wait_for_text(USER_ID, "Nice picture.")
    assert len(content) == 1
    assert image_bytes(content[0]) == picture


async def test_the_largest_photo_within_the_cap_is_chosen(tmp_path: Path, fake: FakeOpenAI, tg: FakeTelegram) -> None:
    """With `gateway.max_attachment_bytes` below the largest size, the next size down is sent."""
    small, large = png(2, 2), png(64, 64) + b"\x00" * 3000
    tg.add_file("small", small)
    tg.add_file("large", large)
    async with telegram_gateway(tmp_path, fake, tg, gateway={"max_attachment_bytes": 2048}):
        await tg.push_update(message=message(private_chat(), "", photo=photo_sizes(small, large), caption="hi"))
        content = last_user(await model_request(fake))
    assert image_bytes(content[1]) == small


async def test_an_oversized_photo_gets_a_short_reply_and_no_model_call(
    tmp_path: Path, fake: FakeOpenAI, tg: FakeTelegram
) -> None:
    """Every size over the cap: the user is told, nothing is downloaded, the model is not called."""
    big = png(2, 2) + b"\x00" * 5000
    tg.add_file("small", big)
    tg.add_file("large", big)
    async with telegram_gateway(tmp_path, fake, tg, gateway={"max_attachment_bytes": 2048}):
        await tg.push_update(message=message(private_chat(), "", photo=photo_sizes(big, big)))
        text = await tg.wait_for_text(USER_ID, "too large")
    assert text == say("en", "media.too_large", size="5 KB", limit="2 KB")
    assert fake.requests == []
    assert tg.downloads == []


async def test_a_file_that_is_not_an_image_is_refused_politely(
    tmp_path: Path, fake: FakeOpenAI, tg: FakeTelegram
) -> None:
    """An "image" document whose bytes are no image format gets one short line; nothing crashes."""
    tg.add_file("doc1", b"this is not a picture", path="documents/x.png")
    document = {"file_id": "doc1", "file_unique_id": "ud", "file_name": "x.png", "mime_type": "image/png",
                "file_size": 21}
    async with telegram_gateway(tmp_path, fake, tg):
        await tg.push_update(message=message(private_chat(), "", document=document, caption="look"))
        text = await tg.wait_for_text(USER_ID, "couldn't read")
    assert "picture" in text
    assert fake.requests == []


async def test_without_vision_the_model_gets_a_description(tmp_path: Path, fake: FakeOpenAI, tg: FakeTelegram) -> None:
    """`model.vision: false`: a one-line description instead of the image; no download."""
    async with telegram_gateway(tmp_path, fake, tg, model={"vision": False}):
        await tg.push_update(message=message(private_chat(), "", photo=photo_sizes(b"x" * 10, b"y" * 20)))
        content = last_user(await model_request(fake))
    assert content == "[image: photo_800x800.jpg, image/jpeg, 20 bytes — this model cannot see images]"
    assert tg.downloads == []


async def test_an_album_is_one_turn(tmp_path: Path, fake: FakeOpenAI, tg: FakeTelegram) -> None:
    """Two photos sharing a media_group_id reach the model as one user message with both images."""
    first, second = png(2, 2, (1, 2, 3)), png(3, 3, (4, 5, 6))
    tg.add_file("a", first)
    tg.add_file("b", second)
    one = [{"file_id": "a", "file_unique_id": "ua", "width": 2, "height": 2, "file_size": len(first)}]
    two = [{"file_id": "b", "file_unique_id": "ub", "width": 3, "height": 3, "file_size": len(second)}]
    fake.push(Reply(content="Two pictures."))
    async with telegram_gateway(tmp_path, fake, tg):
        await tg.push_update(message=message(private_chat(), "", photo=one, caption="both", media_group_id="g1"))
        await tg.push_update(message=message(private_chat(), "", photo=two, media_group_id="g1"))
        content = last_user(await model_request(fake))
        await tg.wait_for_text(USER_ID, "Two pictures.")
    assert content[0] == {"type": "text", "text": "both"}
    assert [image_bytes(part) for part in content[1:]] == [first, second]
    assert len(fake.requests) == 1


async def test_a_voice_note_is_transcribed(tmp_path: Path, fake: FakeOpenAI, tg: FakeTelegram) -> None:
    """With transcription on, the voice bytes go to /audio/transcriptions and the transcript is the turn."""
    audio = b"OggS fake opus payload"
    tg.add_file("v1", audio, path="voice/v1.oga")
    fake.transcript = "remind me to buy milk"
    voice = {"file_id": "v1", "file_unique_id": "uv", "duration": 3, "mime_type": "audio/ogg", "file_size": len(audio)}
    async with telegram_gateway(tmp_path, fake, tg, transcription={"enabled": True}):
        await tg.push_update(message=message(private_chat(), "", voice=voice))
        content = last_user(await model_request(fake))
    assert fake.transcriptions == [("whisper-1", "voice.ogg", audio)]
    assert content == "[voice message, 3s, transcribed] remind me to buy milk"


async def test_voice_without_transcription_is_declined(tmp_path: Path, fake: FakeOpenAI, tg: FakeTelegram) -> None:
    """Transcription off: the user is told voice is not enabled; the model is not called."""
    voice = {"file_id": "v1", "file_unique_id": "uv", "duration": 3, "mime_type": "audio/ogg", "file_size": 10}
    async with telegram_gateway(tmp_path, fake, tg):
        await tg.push_update(message=message(private_chat(), "", voice=voice))
        assert await tg.wait_for_text(USER_ID, "Voice") == say("en", "media.voice_off")
    assert fake.requests == []


async def test_a_small_text_file_is_inlined(tmp_path: Path, fake: FakeOpenAI, tg: FakeTelegram) -> None:
    """A Markdown document is inlined with its name; a PDF is described."""
    tg.add_file("d1", b"# Notes\n- ship it\n", path="documents/notes.md")
    document = {"file_id": "d1", "file_unique_id": "ud", "file_name": "notes.md", "mime_type": "text/markdown",
                "file_size": 18}
    async with telegram_gateway(tmp_path, fake, tg):
        await tg.push_update(message=message(private_chat(), "", document=document, caption="summarise"))
        content = last_user(await model_request(fake))
    assert content == "summarise\n[file notes.md]\n```\n# Notes\n- ship it\n\n```"


async def test_the_command_menu_is_set_at_start(tmp_path: Path, fake: FakeOpenAI, tg: FakeTelegram) -> None:
    """setMyCommands lists the gateway's commands."""
    async with telegram_gateway(tmp_path, fake, tg):
        calls = await tg.wait_for_calls("setMyCommands")
    names = [entry["command"] for entry in calls[0].params["commands"]]
    assert names == ["new", "compress", "status", "usage", "model", "undo", "retry", "memory", "stop", "whoami",
                     "forget", "approve", "deny", "schedules", "unschedule", "help"]


async def test_a_non_admin_new_in_a_group_is_refused(tmp_path: Path, fake: FakeOpenAI, tg: FakeTelegram) -> None:
    """With `platforms.telegram.admins`, another member's /new changes nothing and gets one line; an admin's works."""
    chat = group_chat()
    async with telegram_gateway(tmp_path, fake, tg, telegram={"admins": [42]}) as gateway:
        await tg.push_update(message=message(chat, "/new", sender=user(777)))
        refusal = await tg.wait_for_text(chat["id"], "admins")
        assert gateway.parts.store.list_sessions() == []
        await tg.push_update(message=message(chat, "/new", sender=user(42, "Boss", "boss")))
        done = await tg.wait_for_text(chat["id"], "Started a new conversation")
    assert refusal == "Only this chat's bot admins can use /new here."
    assert done.startswith("Started a new conversation")


async def test_a_photo_replying_to_the_bot_in_a_group_is_a_turn(
    tmp_path: Path, fake: FakeOpenAI, tg: FakeTelegram
) -> None:
    """In a group, a caption-less photo answering the bot is answered, prefixed with the sender's name and id and
    the bot's message it replied to; an unaddressed photo is only recorded, as a labelled one-line description."""
    picture = png(2, 2)
    tg.add_file("small", picture)
    tg.add_file("large", picture)
    chat = group_chat()
    bot_message = message(chat, "Send me the chart.", sender=bot_user())
    async with telegram_gateway(tmp_path, fake, tg) as gateway:
        await tg.push_update(message=message(chat, "", photo=photo_sizes(picture, picture), sender=user(5, "Bo")))
        await tg.push_update(message=message(chat, "", photo=photo_sizes(picture, picture), sender=user(6, "Cy"),
                                             reply_to_message=bot_message))
        request = await model_request(fake)
    users = [m["content"] for m in request["messages"] if m["role"] == "user"]
    assert users[0] == f"(not addressed to you) Bo (id 5): [image: photo_800x800.jpg, image/jpeg, {len(picture)} bytes]"
    assert users[1][0] == {"type": "text", "text": 'Cy (id 6): (replying to your message: "Send me the chart.")\n'
                                                  "(sent an image)"}
    assert image_bytes(users[1][1]) == picture
    assert gateway.parts.runner.turns_run == 1


async def test_a_chat_may_drop_the_mention_rule(tmp_path: Path, fake: FakeOpenAI, tg: FakeTelegram) -> None:
    """`chats."telegram:<id>".require_mention: false` answers that group's plain messages; other groups still
    need a mention."""
    quiet, open_chat = group_chat(-100111), group_chat(-100222)
    fake.push(Reply(content="Answered."))
    chats = {"telegram:-100222": {"require_mention": False}}
    async with telegram_gateway(tmp_path, fake, tg, chats=chats) as gateway:
        await tg.push_update(message=message(quiet, "plain words"))
        await tg.push_update(message=message(open_chat, "plain words"))
        await tg.wait_for_text(-100222, "Answered.")
    assert gateway.decisions == {"record": 1, "respond": 1}
