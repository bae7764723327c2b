"""The CLI's first-hour rough edges: version, help texts, chat scoping."""
from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import structlog

from gateway.cli import build_parser, main, version


@pytest.fixture(autouse=True)
def _reset_logging() -> Iterator[None]:
    yield
    structlog.reset_defaults()


@pytest.fixture
def config(home: Path, tmp_path: Path) -> str:
    path = tmp_path / "config.yaml"
    path.write_text(f"home: {home}\n", encoding="utf-8")
    return str(path)


def test_version_prints_the_package_version(capsys: pytest.CaptureFixture[str]) -> None:
    """`chorus --version` prints `chorus <version>` and exits 0."""
    with pytest.raises(SystemExit) as exit_info:
        main(["--version"])
    assert (exit_info.value.code, capsys.readouterr().out) == (0, f"chorus {version()}\n")
    assert version() == "0.1.0"


def test_compress_help_names_the_default_summarizer() -> None:
    """`chorus compress --help` says which summariser runs when none is chosen."""
    text = " ".join(build_parser()._subparsers._group_actions[0].choices["compress"].format_help().split())  # type: ignore[union-attr]
    assert "(default: fallback)" in text


@pytest.mark.parametrize(
    "argv",
    [
        ["memory", "add", "--chat", "streamtest", "note"],
        ["memory", "show", "--chat", "matrix:room"],
        ["sessions", "list", "--chat", "streamtest"],
        ["sessions", "search", "--chat", "-100123", "query"],
        ["sessions", "import", "missing.jsonl", "--chat", "ops"],
    ],
)
def test_an_unscoped_chat_is_refused_with_the_platforms_and_an_example(
    argv: list[str], config: str, home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A bare or unknown-platform chat id exits 2 with one line naming the platforms and an example; nothing is written."""
    assert main([*argv, "--config", config]) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1
    assert "--chat:" in err and "is not a scoped chat id" in err
    assert "console, discord, slack, telegram, web" in err and "telegram:-100123456" in err
    assert not (home / "memories").exists()


def test_a_scoped_chat_is_accepted(config: str, capsys: pytest.CaptureFixture[str]) -> None:
    """`web:streamtest` is written where the gateway reads that chat's notes."""
    assert main(["memory", "add", "--chat", "web:streamtest", "--config", config, "Likes tea."]) == 0
    assert main(["memory", "show", "--chat", "web:streamtest", "--config", config]) == 0
    assert "Likes tea." in capsys.readouterr().out


def test_help_texts_say_platform_chat() -> None:
    """The --chat help of memory and sessions shows the PLATFORM:CHAT form."""
    parser = build_parser()
    choices = parser._subparsers._group_actions[0].choices  # type: ignore[union-attr]
    memory_add = choices["memory"]._subparsers._group_actions[0].choices["add"].format_help()
    sessions_list = choices["sessions"]._subparsers._group_actions[0].choices["list"].format_help()
    assert "--chat PLATFORM:CHAT" in memory_add and "--chat PLATFORM:CHAT" in sessions_list


@pytest.mark.parametrize("command", ["compress", "import"])
def test_deeply_nested_json_input_is_one_line_not_a_traceback(
    command: str, config: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A file nested past the JSON parser's limit exits 2 with one line naming the file."""
    if command == "compress":
        path = tmp_path / "deep.json"
        path.write_text("[" * 100_000 + "]" * 100_000, encoding="utf-8")
        argv = ["compress", str(path), "--config", config]
    else:
        path = tmp_path / "deep.jsonl"
        path.write_text('{"messages": ' * 5_000 + "1" + "}" * 5_000 + "\n", encoding="utf-8")
        argv = ["sessions", "import", str(path), "--config", config]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and "nested too deeply" in err and str(path) in err
