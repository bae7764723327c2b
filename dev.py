#!/usr/bin/env python3
"""Bootstrap: `python3 dev.py run` starts the gateway, `python3 dev.py test` runs the suite.

Each creates `.venv` beside this file on first use (and refreshes it when
pyproject.toml changes), so a fresh machine needs only Python 3.11+.
"""
from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent
VENV = Path(os.environ.get("CHORUS_VENV", ROOT / ".venv"))
STAMP = VENV / ".chorus-installed"


def _python() -> Path:
    return VENV / ("Scripts" if os.name == "nt" else "bin") / "python"


def _ensure_env() -> None:
    if sys.version_info < (3, 11):  # noqa: UP036 - a clear message on old Pythons
        sys.exit(f"Chorus needs Python 3.11 or newer; this is {sys.version.split()[0]}")
    wanted = hashlib.sha256((ROOT / "pyproject.toml").read_bytes()).hexdigest()
    if STAMP.exists() and STAMP.read_text() == wanted and _python().exists():
        return
    if not _python().exists():
        print(f"creating {VENV}", file=sys.stderr)
        venv.EnvBuilder(with_pip=True).create(VENV)
    pip = [str(_python()), "-m", "pip", "install", "--disable-pip-version-check", "-q"]
    subprocess.run([*pip, "-e", f"{ROOT}[test]"], check=True)
    STAMP.write_text(wanted)


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in {"run", "test", "check", "chorus"}:
        print("usage: python3 dev.py run [chorus run options] | test [pytest options] | check | chorus ARGS", file=sys.stderr)
        return 2
    _ensure_env()
    command, rest = argv[0], argv[1:]
    os.chdir(ROOT)
    if command == "test":
        args = [str(_python()), "-m", "pytest", *rest]
    elif command == "check":
        typed = subprocess.call([str(_python()), "-m", "mypy", *rest])
        linted = subprocess.call([str(_python()), "-m", "ruff", "check", "."])
        return typed or linted
    elif command == "run":
        args = [str(_python()), "-m", "gateway.cli", "run", *rest]
    else:
        args = [str(_python()), "-m", "gateway.cli", *rest]
    return subprocess.call(args)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
