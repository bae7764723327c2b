"""Changing the configuration from the admin API: one path for `PATCH /api/config` and the dashboard's editor.

Owns `ConfigEdits.apply` (validate with the config models, write to the file keeping comments when asked,
apply the live keys, tell the other replicas) and the routes `GET /api/config/schema` and
`GET /api/config/audit`. A key that needs a restart is written to the file only (with `persist`) and
answered "restart needed: KEY"; it is announced as a `ConfigSaved` event for the audit log. A value
outside a key's choices gets "did you mean" like a mistyped key does. Under `/api/`, so the admin token
guards every route.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import structlog
from aiohttp import web
from pydantic import ValidationError

from chorus_errors import ConfigError
from gateway.admin.audit import AuditStore
from gateway.admin.config_file import save_changes
from gateway.admin.config_schema import applies, choices, config_schema
from gateway.admin.query import BadQuery, query_limit
from gateway.config import ChorusConfig, describe_validation_error, did_you_mean
from gateway.ops.config_sync import ConfigSync
from gateway.ops.events import ConfigSaved
from gateway.ops.live_config import LiveConfig, flatten, live_values, restart_text, set_dotted, shown

log = structlog.get_logger(__name__)

RUNTIME_NOTE = "runtime only: lost on restart"
# `{restart}` is live_config's `restart needed: KEY (why)`.
NEEDS_FILE_TEXT = ("{restart}; it can only be saved to the config file (persist=true), "
                   "but chorus started on built-in defaults: start with --config FILE")
NOT_SAVED_TEXT = "{restart}; save it to the config file (persist=true) and restart chorus"
MAX_AUDIT = 500


def _validated(config: ChorusConfig, changes: Mapping[str, object]) -> dict[str, object]:
    """`changes` checked against the config models (any key, live or not): the values as the models read them."""
    tree: dict[str, Any] = config.model_dump(mode="python", by_alias=True)
    set_dotted(tree, changes)
    try:
        checked = flatten(ChorusConfig.model_validate(tree))
    except ValidationError as exc:
        first = ".".join(str(part) for part in exc.errors()[0]["loc"])
        raise ConfigError(describe_validation_error(exc, "change"), key=first) from None
    return {key: checked[key] for key in changes}


def _with_hint(exc: ConfigError, changes: Mapping[str, object]) -> ConfigError:
    """`exc` with "did you mean" when the value given is near one of the key's choices."""
    value = changes.get(exc.key or "")
    if not isinstance(value, str) or "did you mean" in str(exc):
        return exc
    hint = did_you_mean(value, [str(choice) for choice in choices(exc.key or "")])
    return ConfigError(f"{exc}{hint}", key=exc.key) if hint else exc


class ConfigEdits:
    """Changes to the running config and its file, as the admin API makes them."""

    def __init__(self, live: LiveConfig, sync: ConfigSync | None) -> None:
        self.live = live
        self.sync = sync

    async def apply(self, changes: Mapping[str, object], *, who: str, persist: bool) -> dict[str, object]:
        """Apply `changes` (dotted keys); the response body of `PATCH /api/config`.

        Raises:
            ConfigError: an unknown key, an invalid value, a restart key without `persist`, or a file that
                cannot be written (`.key` names the key; nothing was changed).
        """
        live = self.live
        if not changes:
            raise ConfigError("no changes given; send a JSON object such as {\"compression.threshold\": 0.6}")
        known = flatten(live.current())
        for key in changes:
            if key not in known:
                hint = did_you_mean(key, known) or "; GET /api/config/schema lists the keys"
                raise ConfigError(f"{key}: unknown key{hint}", key=key)
        if persist and live.path is None:
            raise ConfigError("persist=true needs a config file, but chorus started on built-in defaults; "
                              "drop persist to change at runtime only, or start with --config FILE")
        later = [key for key in changes if applies(key) == "restart"]
        if later and not persist:
            text = NEEDS_FILE_TEXT if live.path is None else NOT_SAVED_TEXT
            raise ConfigError(text.format(restart=restart_text(later[:1])), key=later[0])
        now = {key: value for key, value in changes.items() if key not in later}
        try:
            values = _validated(live.current(), changes)
            if now:
                live.preview(now)  # LiveConfig's own checks too, before the file is touched
            saved = save_changes(live.path, values) if persist and live.path is not None else None
            change = live.update(now, who=who) if now else None
        except ConfigError as exc:
            raise _with_hint(exc, changes) from None
        for key in later:
            log.info("admin.config_saved", setting=key, who=who, note=restart_text([key]))
            live.bus.publish(ConfigSaved(key, shown(known[key]), shown(values[key]), who))
        config = change.config if change is not None else live.current()
        response: dict[str, object] = {
            "changed": [{"key": c.key, "old": c.old, "new": c.new} for c in change.changes] if change else [],
            "values": live_values(config),
            "persisted": saved is not None,
            "applies": "from the next message",
            "restart_needed": later,
        }
        if later:
            response["note"] = restart_text(later)
        if saved is not None:
            response.update(path=str(saved.path), mode=saved.mode)
        else:
            response["note"] = RUNTIME_NOTE
        if self.sync is not None and now:  # even when this replica had the value already: the others may not
            told = await self.sync.changed(now, who=who)
            response["replicas"] = "told" if told else "not reached: this replica only"
        return response


def config_routes(live: LiveConfig, audit: AuditStore) -> list[web.RouteDef]:
    """`GET /api/config/schema` (every key) and `GET /api/config/audit` (who changed what, newest first)."""

    async def schema(_request: web.Request) -> web.Response:
        return web.json_response({"path": str(live.path) if live.path else None, "version": live.version,
                                  "keys": config_schema(live.current())})

    async def audit_list(request: web.Request) -> web.Response:
        try:
            limit = query_limit(request, default=100, maximum=MAX_AUDIT)
        except BadQuery as exc:
            return exc.response
        entries, shared = await audit.recent(limit)
        return web.json_response({"entries": [e.to_json() for e in entries],
                                  "scope": "every replica" if shared else "this replica"})

    return [web.get("/api/config/schema", schema), web.get("/api/config/audit", audit_list)]


__all__ = ["RUNTIME_NOTE", "ConfigEdits", "config_routes"]
