"""Chat messages as frozen values, and their conversion to and from the OpenAI wire format.

Owns: `Message`, `ToolCall`, content parts, `ToolSchema`, wire conversion and
validation. In-process metadata (`compressed_summary`, `summary_has_user_turn`)
lives on the value and never goes on the wire.
"""
from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal, TypeAlias

from chorus_errors import MessageFormatError

Role: TypeAlias = Literal["system", "user", "assistant", "tool"]
ROLES: frozenset[str] = frozenset({"system", "user", "assistant", "tool"})


@dataclass(frozen=True, slots=True)
class TextPart:
    text: str
    kind: Literal["text"] = "text"


@dataclass(frozen=True, slots=True)
class ImagePart:
    """An image as a URL; `data:` URLs carry their base64 payload inline."""

    url: str
    detail: str | None = None
    kind: Literal["image"] = "image"


ContentPart: TypeAlias = TextPart | ImagePart
Content: TypeAlias = str | tuple[ContentPart, ...] | None


@dataclass(frozen=True, slots=True)
class ToolCall:
    id: str
    name: str
    arguments: str  # JSON text as the model wrote it


@dataclass(frozen=True, slots=True)
class Message:
    role: Role
    content: Content = None
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None
    name: str | None = None
    # In-process only: never serialised by `to_wire`.
    compressed_summary: bool = field(default=False, compare=False)
    summary_has_user_turn: bool = field(default=False, compare=False)

    @property
    def text(self) -> str:
        """The text of the content; image parts contribute nothing."""
        content = self.content
        if content is None:
            return ""
        if isinstance(content, str):
            return content
        return "\n".join(part.text for part in content if isinstance(part, TextPart))

    @property
    def images(self) -> tuple[ImagePart, ...]:
        if isinstance(self.content, tuple):
            return tuple(part for part in self.content if isinstance(part, ImagePart))
        return ()

    def with_content(self, content: Content) -> Message:
        return replace(self, content=content)


def system(text: str) -> Message:
    return Message(role="system", content=text)


def user(text: str, *, name: str | None = None) -> Message:
    return Message(role="user", content=text, name=name)


def assistant(text: str | None, *, tool_calls: Sequence[ToolCall] = ()) -> Message:
    return Message(role="assistant", content=text, tool_calls=tuple(tool_calls))


def tool_result(tool_call_id: str, text: str, *, name: str | None = None) -> Message:
    return Message(role="tool", content=text, tool_call_id=tool_call_id, name=name)


@dataclass(frozen=True, slots=True)
class ToolSchema:
    """An OpenAI function tool definition."""

    name: str
    description: str
    parameters: Mapping[str, Any]

    def to_wire(self) -> dict[str, Any]:
        return {
            "type": "function",
            "function": {"name": self.name, "description": self.description, "parameters": dict(self.parameters)},
        }


def _part_from_wire(raw: object, index: int) -> ContentPart:
    if not isinstance(raw, Mapping):
        raise MessageFormatError(f"message {index}: content part must be an object", index=index, field="content")
    kind = raw.get("type")
    if kind == "text":
        return TextPart(text=str(raw.get("text", "")))
    if kind == "image_url":
        image = raw.get("image_url")
        if isinstance(image, Mapping):
            detail = image.get("detail")
            return ImagePart(url=str(image.get("url", "")), detail=str(detail) if detail else None)
        return ImagePart(url=str(image or ""))
    raise MessageFormatError(
        f"message {index}: content part type {kind!r} is not supported (text, image_url)",
        index=index,
        field="content",
    )


def _tool_call_from_wire(raw: object, index: int) -> ToolCall:
    if not isinstance(raw, Mapping):
        raise MessageFormatError(f"message {index}: tool_calls entries must be objects", index=index, field="tool_calls")
    function = raw.get("function")
    if not isinstance(function, Mapping) or not isinstance(function.get("name"), str):
        raise MessageFormatError(
            f"message {index}: tool call needs function.name", index=index, field="tool_calls"
        )
    arguments = function.get("arguments", "")
    if not isinstance(arguments, str):
        arguments = json.dumps(arguments, ensure_ascii=False)
    return ToolCall(id=str(raw.get("id", "")), name=function["name"], arguments=arguments)


def from_wire(raw: object, index: int = 0) -> Message:
    """Validate one OpenAI chat message; errors name the index and the field."""
    if not isinstance(raw, Mapping):
        raise MessageFormatError(f"message {index}: expected an object, got {type(raw).__name__}", index=index)
    role = raw.get("role")
    if role not in ROLES:
        raise MessageFormatError(
            f"message {index}: role {role!r} is not one of system, user, assistant, tool", index=index, field="role"
        )
    content_raw = raw.get("content")
    content: Content
    if content_raw is None or isinstance(content_raw, str):
        content = content_raw
    elif isinstance(content_raw, list):
        content = tuple(_part_from_wire(part, index) for part in content_raw)
    else:
        raise MessageFormatError(
            f"message {index}: content must be a string, a list of parts or null", index=index, field="content"
        )
    calls_raw = raw.get("tool_calls") or ()
    if not isinstance(calls_raw, list | tuple):
        raise MessageFormatError(f"message {index}: tool_calls must be a list", index=index, field="tool_calls")
    tool_call_id = raw.get("tool_call_id")
    if role == "tool" and not isinstance(tool_call_id, str):
        raise MessageFormatError(f"message {index}: a tool message needs tool_call_id", index=index, field="tool_call_id")
    name = raw.get("name")
    return Message(
        role=role,
        content=content,
        tool_calls=tuple(_tool_call_from_wire(call, index) for call in calls_raw),
        tool_call_id=tool_call_id if isinstance(tool_call_id, str) else None,
        name=name if isinstance(name, str) else None,
    )


def messages_from_wire(raw: Iterable[object]) -> list[Message]:
    return [from_wire(item, index) for index, item in enumerate(raw)]


def _part_to_wire(part: ContentPart) -> dict[str, Any]:
    if isinstance(part, TextPart):
        return {"type": "text", "text": part.text}
    image: dict[str, Any] = {"url": part.url}
    if part.detail:
        image["detail"] = part.detail
    return {"type": "image_url", "image_url": image}


def to_wire(message: Message) -> dict[str, Any]:
    """The OpenAI wire form; in-process metadata is left out."""
    wire: dict[str, Any] = {"role": message.role}
    content = message.content
    wire["content"] = [_part_to_wire(p) for p in content] if isinstance(content, tuple) else content
    if message.tool_calls:
        wire["tool_calls"] = [
            {"id": call.id, "type": "function", "function": {"name": call.name, "arguments": call.arguments}}
            for call in message.tool_calls
        ]
    if message.tool_call_id is not None:
        wire["tool_call_id"] = message.tool_call_id
    if message.name is not None:
        wire["name"] = message.name
    return wire


def messages_to_wire(messages: Iterable[Message]) -> list[dict[str, Any]]:
    return [to_wire(message) for message in messages]


def tool_schema_from_wire(raw: object) -> ToolSchema:
    if not isinstance(raw, Mapping):
        raise MessageFormatError("tool schema must be an object", field="tools")
    function = raw.get("function", raw)
    if not isinstance(function, Mapping) or not isinstance(function.get("name"), str):
        raise MessageFormatError("tool schema needs function.name", field="tools")
    parameters = function.get("parameters") or {}
    return ToolSchema(
        name=function["name"],
        description=str(function.get("description", "")),
        parameters=parameters if isinstance(parameters, Mapping) else {},
    )
