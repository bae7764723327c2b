"""Configuration loading and its error texts."""
from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import SecretStr

from chorus_errors import ConfigError
from gateway.config import ChorusConfig, load_config, parse_config

ROOT = Path(__file__).resolve().parent.parent.parent


def test_defaults_match_the_spec() -> None:
    """No file means the spec's defaults."""
    config = ChorusConfig()
    assert (config.compression.threshold, config.compression.hygiene_hard_message_limit) == (0.50, 5000)
    assert (config.memory.memory_char_limit, config.memory.user_char_limit) == (2200, 1375)
    assert (config.platforms.web.port, config.admin.port, config.redis.url) == (8080, 9090, None)


def test_example_config_is_valid() -> None:
    """config.yaml.example loads as it is (with its environment variables set)."""
    config = load_config(ROOT / "config.yaml.example", env={"OPENAI_API_KEY": "sk-x"})
    assert config.model.api_key is not None and config.model.api_key.get_secret_value() == "sk-x"


def test_example_config_as_copied_is_the_embedded_defaults() -> None:
    """With no environment variable set the copied example loads, and equals running with no config at all."""
    config = load_config(ROOT / "config.yaml.example", env={})
    assert _no_empty_secrets(config.model_dump()) == ChorusConfig().model_dump()
    assert not config.model.api_key  # empty: treated as no key


def _no_empty_secrets(value: object) -> object:
    """`${TOKEN:-}` gives an empty secret, which every reader treats as unset (None)."""
    if isinstance(value, dict):
        return {k: _no_empty_secrets(v) for k, v in value.items()}
    if isinstance(value, SecretStr) and not value.get_secret_value():
        return None
    return value


def test_env_interpolation_with_default() -> None:
    """${NAME:-default} falls back; ${NAME} takes the environment."""
    config = parse_config({"model": {"name": "${M:-gpt-x}", "base_url": "${URL}"}}, env={"URL": "http://h/v1"})
    assert (config.model.name, config.model.base_url) == ("gpt-x", "http://h/v1")


def test_missing_env_names_the_key_and_variable() -> None:
    """An unset variable is an error naming the key and the variable."""
    with pytest.raises(ConfigError, match=r"model\.api_key: environment variable NOPE is not set"):
        parse_config({"model": {"api_key": "${NOPE}"}}, env={})


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ({"compression": {"threshold": 1.7}}, "compression.threshold: got 1.7"),
        ({"compression": {"max_attempts": 11}}, "compression.max_attempts: got 11"),
        ({"gateway": {"busy_input_mode": "drop"}}, "gateway.busy_input_mode: got 'drop'"),
        ({"compresion": {}}, "compresion: unknown key"),
    ],
)
def test_bad_values_name_key_value_and_allowed(raw: dict[str, object], expected: str) -> None:
    """Validation errors say which key, what value, and what is allowed."""
    with pytest.raises(ConfigError) as caught:
        parse_config(raw, source="c.yaml")
    assert expected in str(caught.value)


def test_secrets_are_never_echoed() -> None:
    """A bad secret value does not appear in the error text."""
    with pytest.raises(ConfigError) as caught:
        parse_config({"platforms": {"telegram": {"token": ["sekrit-123"]}}})
    assert "sekrit-123" not in str(caught.value)
    assert "platforms.telegram.token" in str(caught.value)


def test_invalid_yaml_names_line(tmp_path: Path) -> None:
    """Broken YAML says where."""
    path = tmp_path / "c.yaml"
    path.write_text("model:\n  name: [unclosed\n")
    with pytest.raises(ConfigError, match="not valid YAML at line"):
        load_config(path)
