"""The exception hierarchy of Chorus, below all three packages so each may import it.

Owns `ChorusError` and its families (config, messages, models, platforms). Imports nothing of ours.
Errors carry data (status, model, retry_after); callers branch on the type and
the fields, never on the message text. Control-flow signals are not errors.
"""
from __future__ import annotations


class ChorusError(Exception):
    """Root of every error Chorus raises on purpose."""


class ConfigError(ChorusError):
    """Configuration that cannot be used; the message names the key and the fix."""

    def __init__(self, message: str, *, key: str | None = None) -> None:
        super().__init__(message)
        self.key = key


class MessageFormatError(ChorusError):
    """A chat message that is not a valid OpenAI chat message."""

    def __init__(self, message: str, *, index: int | None = None, field: str | None = None) -> None:
        super().__init__(message)
        self.index = index
        self.field = field


class ModelError(ChorusError):
    """A model call failed; `status` is the HTTP status when there was one."""

    def __init__(self, message: str, *, status: int | None = None, model: str = "") -> None:
        super().__init__(message)
        self.status = status
        self.model = model


class ContextOverflow(ModelError):
    """The request was larger than the model accepts (413, context_length_exceeded).

    `stated_limit` is the window the provider named in its error, when it named one.
    """

    def __init__(
        self, message: str, *, status: int | None = None, model: str = "", stated_limit: int | None = None
    ) -> None:
        super().__init__(message, status=status, model=model)
        self.stated_limit = stated_limit


class RateLimited(ModelError):
    """429 from the provider; `long_context` marks a 429 caused by request size."""

    def __init__(
        self,
        message: str,
        *,
        status: int | None = 429,
        model: str = "",
        retry_after: float | None = None,
        long_context: bool = False,
    ) -> None:
        super().__init__(message, status=status, model=model)
        self.retry_after = retry_after
        self.long_context = long_context


class ModelAuthError(ModelError):
    """401/403: credentials are wrong or lack access; retrying cannot help."""


class ModelUnavailable(ModelError):
    """404/5xx/timeout/connection failure/unusable output: another model may work."""

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        model: str = "",
        timeout: bool = False,
        connection: bool = False,
    ) -> None:
        super().__init__(message, status=status, model=model)
        self.timeout = timeout
        self.connection = connection  # the endpoint could not be reached at all (network down)


class ModelNotConfigured(ModelError):
    """No model is configured; the message says which keys to set."""


class AdapterError(ChorusError):
    """A platform call failed. `retry_after` is set when the platform asked us to wait."""

    def __init__(self, message: str, *, platform: str, retry_after: float | None = None, status: int | None = None) -> None:
        super().__init__(message)
        self.platform = platform
        self.retry_after = retry_after
        self.status = status
