"""Speech to text through an OpenAI-compatible `/audio/transcriptions` endpoint.

Owns the `Transcriber` Protocol and `OpenAITranscriber` (the `openai` client,
no SDK retries, errors translated to `TranscriptionFailed`, the key never in a
message). Knows nothing of platforms: it is handed bytes and a file name.
"""
from __future__ import annotations

from typing import Protocol

import openai

from agent.usage_meter import report_transcription
from chorus_errors import ModelError


class TranscriptionFailed(ModelError):
    """The transcription endpoint refused or could not be reached."""


class Transcriber(Protocol):
    async def transcribe(self, audio: bytes, *, filename: str, mime_type: str | None = None) -> str:
        """The spoken text of `audio` (may be empty for silence).

        Raises:
            TranscriptionFailed: the endpoint failed.
        """
        ...


class OpenAITranscriber:
    """`Transcriber` over `POST {base_url}/audio/transcriptions`.

    Args:
        model: the transcription model, e.g. whisper-1.
        base_url: endpoint root (…/v1); None means the SDK default.
        api_key: the key; never logged.
        timeout_seconds: per-request timeout.
    """

    def __init__(self, *, model: str, base_url: str | None, api_key: str | None, timeout_seconds: float = 60.0) -> None:
        self.model = model
        self._base_url = base_url
        self._api_key = api_key
        self._timeout = timeout_seconds
        self._client: openai.AsyncOpenAI | None = None

    def _sdk(self) -> openai.AsyncOpenAI:
        if self._client is None:
            self._client = openai.AsyncOpenAI(
                base_url=self._base_url, api_key=self._api_key or "unset", max_retries=0, timeout=self._timeout
            )
        return self._client

    async def transcribe(self, audio: bytes, *, filename: str, mime_type: str | None = None) -> str:
        file = (filename, audio, mime_type) if mime_type else (filename, audio)
        try:
            result = await self._sdk().audio.transcriptions.create(model=self.model, file=file)
        except openai.APIStatusError as exc:
            raise TranscriptionFailed(
                f"transcription model {self.model} refused the request ({exc.status_code})",
                status=exc.status_code, model=self.model,
            ) from None
        except openai.OpenAIError as exc:
            raise TranscriptionFailed(
                f"transcription model {self.model} failed: {type(exc).__name__}", model=self.model
            ) from None
        text = str(result.text).strip()
        await report_transcription(self.model, text)
        return text

    async def close(self) -> None:
        if self._client is not None:
            await self._client.close()
            self._client = None


__all__ = ["OpenAITranscriber", "TranscriptionFailed", "Transcriber"]
