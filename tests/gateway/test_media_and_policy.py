"""Pure parts of the assistant features: image sniffing, descriptions, prompt sources, model choices, chat store."""
from __future__ import annotations

from pathlib import Path

import pytest

from adapters.base import Attachment
from agent.messages import ImagePart, Message, TextPart
from agent.prompt import DEFAULT_BASE_PROMPT
from agent.tokens import IMAGE_TOKENS
from chorus_errors import ConfigError
from gateway.chats.policy import ChatPolicy
from gateway.chats.store import SqliteChatStore, Usage
from gateway.commands.table import COMMANDS
from gateway.config import load_config
from gateway.sessions.hygiene import estimate_history_tokens
from gateway.sessions.media import describe, image_mime, is_text_file
from tests.fakes.images import png
from tests.gateway.harness import make_config


@pytest.mark.parametrize(("data", "expected"), [
    (png(), "image/png"),
    (b"\xff\xd8\xff\xe0" + b"\x00" * 20, "image/jpeg"),
    (b"GIF89a" + b"\x00" * 10, "image/gif"),
    (b"RIFF\x10\x00\x00\x00WEBPVP8 ", "image/webp"),
    (b"%PDF-1.7", None),
    (b"", None),
])
def test_image_types_are_decided_by_the_bytes(data: bytes, expected: str | None) -> None:
    """The magic number decides; a PDF or nothing is not an image."""
    assert image_mime(data) == expected


@pytest.mark.parametrize(("attachment", "expected"), [
    (Attachment(kind="audio", voice=True, duration=4.2, size=2048), "[voice message: 2 KB, 4s]"),
    (Attachment(kind="file", name="report.pdf", mime_type="application/pdf", size=1_500_000),
     "[file: report.pdf, application/pdf, 1.5 MB]"),
    (Attachment(kind="video"), "[video]"),
])
def test_descriptions_name_what_was_sent(attachment: Attachment, expected: str) -> None:
    """One line: kind, name, type, size, duration."""
    assert describe(attachment) == expected


@pytest.mark.parametrize(("name", "mime", "expected"), [
    ("notes.md", None, True), ("main.py", "application/octet-stream", True), ("data", "application/json", True),
    ("photo.jpg", "image/jpeg", False), ("archive.zip", "application/zip", False),
])
def test_text_files_are_recognised_by_type_or_suffix(name: str, mime: str | None, expected: bool) -> None:
    assert is_text_file(Attachment(kind="file", name=name, mime_type=mime)) is expected


def test_prompt_sources_in_order_of_precedence(tmp_path: Path) -> None:
    """Chat override > file > config text > default."""
    prompt = tmp_path / "p.md"
    prompt.write_text("From the file.\n", encoding="utf-8")
    config = make_config(tmp_path, "http://127.0.0.1:1/v1",
                         agent={"system_prompt": "From config.", "system_prompt_file": str(prompt)},
                         chats={"web:x": {"system_prompt": "For x."}})
    policy = ChatPolicy(config)
    assert (policy.prompt_for("web:x").text, policy.prompt_for("web:x").source) == ("For x.", "chat override")
    assert (policy.prompt_for("web:y").text, policy.prompt_for("web:y").source) == ("From the file.", "file")
    prompt.unlink()
    assert policy.prompt_for("web:y").source == "config"
    assert ChatPolicy(make_config(tmp_path, "http://x/v1")).prompt_for("web:y").text == DEFAULT_BASE_PROMPT


def test_a_missing_prompt_file_is_a_config_error(tmp_path: Path) -> None:
    """`agent.system_prompt_file` that does not exist names the key and says it is relative to the config."""
    path = tmp_path / "config.yaml"
    path.write_text("agent:\n  system_prompt_file: nope.md\n", encoding="utf-8")
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    assert caught.value.key == "agent.system_prompt_file"
    assert "relative to the config file" in str(caught.value)


def test_model_choices_are_name_allowed_then_fallbacks(tmp_path: Path) -> None:
    """Duplicates collapse; a fallback keeps its own window."""
    config = make_config(tmp_path, "http://x/v1", model={
        "allowed": ["b", "fake-model"], "fallbacks": [{"name": "c", "context_length": 4096}, {"name": "b"}]})
    choices = ChatPolicy(config).models()
    assert [(c.name, c.context_length) for c in choices] == [("fake-model", 128000), ("b", 128000), ("c", 4096)]


def test_chat_store_keeps_model_and_adds_usage(tmp_path: Path) -> None:
    """Usage sums per chat and per platform; the model choice survives a reopen."""
    store = SqliteChatStore(tmp_path / "chats.db")
    store.open()
    store.add_usage("web:a", "web", Usage(10, 2, 1))
    store.add_usage("web:a", "web", Usage(5, 1, 1))
    store.add_usage("telegram:1", "telegram", Usage(7, 3, 1))
    store.set_model("web:a", "big")
    store.close()
    store.open()
    record = store.get("web:a")
    assert (record.model, record.usage) == ("big", Usage(15, 3, 2))
    assert store.get("web:unknown").usage == Usage()
    assert store.usage_by_platform() == {"web": Usage(15, 3, 2), "telegram": Usage(7, 3, 1)}
    store.close()


def test_the_command_menu_lists_every_command() -> None:
    """Menus stay in step with the command list (/reset is /new's alias, not listed twice)."""
    assert sorted(entry.name for entry in COMMANDS.menu) == sorted(COMMANDS.names - {"reset"})


def test_unknown_commands_are_text_for_the_agent() -> None:
    """/weather is no command: it reaches the agent as text."""
    assert COMMANDS.parse("/weather in Paris") is None
    assert COMMANDS.parse("/model gpt-4o") is not None


def test_hygiene_estimate_counts_images() -> None:
    """An image adds the documented per-image estimate, whatever the size of its payload."""
    small = Message(role="user", content=(TextPart("look"), ImagePart("data:image/png;base64,QUJD")))
    large = Message(role="user", content=(TextPart("look"), ImagePart("data:image/png;base64," + "QUJD" * 10000)))
    plain = Message(role="user", content="look")
    assert estimate_history_tokens([small]) == estimate_history_tokens([large]) == (
        estimate_history_tokens([plain]) + IMAGE_TOKENS)


def test_a_chat_model_outside_the_choices_is_a_config_error(tmp_path: Path) -> None:
    """`chats.X.model` must be model.name, in model.allowed or a fallback: the error names the chat and the fix."""
    with pytest.raises(ConfigError) as caught:
        make_config(tmp_path, "http://x/v1", chats={"telegram:1": {"model": "gpt-9"}})
    assert 'chats."telegram:1".model' in str(caught.value)
    assert "model.allowed" in str(caught.value)
    assert "sk-test" not in str(caught.value)  # the tree (with its secrets) is never echoed
