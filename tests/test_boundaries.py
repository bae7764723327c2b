"""Meta-tests: the import rules of STYLE.md §1 hold for every module."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
# package -> top-level packages of ours it must never import
FORBIDDEN = {
    "agent": {"gateway", "adapters"},
    "adapters": {"gateway", "agent"},
    "chorus_errors": {"gateway", "adapters", "agent"},
    "gateway/coord": {"agent", "adapters"},  # coordination is storage-agnostic: keys and bytes, no agents
}
OURS = ("agent", "gateway", "adapters", "chorus_errors")


def _imported_roots(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    roots: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            roots.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            roots.add(node.module.split(".")[0])
    return roots


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_package_does_not_import_forbidden_layers(package: str) -> None:
    """agent/ knows no platforms or gateway; adapters/ know neither gateway nor agent."""
    offenders = {
        str(path.relative_to(ROOT)): sorted(_imported_roots(path) & FORBIDDEN[package])
        for path in (ROOT / package).rglob("*.py")
        if _imported_roots(path) & FORBIDDEN[package]
    }
    assert offenders == {}


# gateway/ folder -> modules of ours it must never import: its folders follow the message (adapters → intake →
# sessions → delivery); what a chat is (`chats/`) sits below the sessions, running a command (`commands/`) above them.
ABOVE_SESSIONS = ("gateway.commands.chat", "gateway.commands.host", "gateway.app", "gateway.build", "gateway.admin",
                  "gateway.cli")
FOLDER_RULES: dict[str, tuple[str, ...]] = {
    "gateway/intake": ("gateway.sessions", "gateway.delivery", *ABOVE_SESSIONS),
    "gateway/chats": ("gateway.sessions", "gateway.commands", "gateway.delivery", *ABOVE_SESSIONS),
    "gateway/delivery": ("gateway.sessions", "gateway.intake", "gateway.commands", "gateway.chats", *ABOVE_SESSIONS),
    "gateway/sessions": ABOVE_SESSIONS,
    "gateway/commands": ("gateway.app", "gateway.build", "gateway.admin", "gateway.cli"),
}


def _imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    modules: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            modules.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            modules.add(node.module)
    return modules


@pytest.mark.parametrize("folder", sorted(FOLDER_RULES))
def test_gateway_folders_follow_the_message(folder: str) -> None:
    """intake never reaches sessions or delivery; chats stay below sessions; commands run above them."""
    def forbidden(module: str) -> bool:
        return any(module == rule or module.startswith(rule + ".") for rule in FOLDER_RULES[folder])

    offenders = {
        str(path.relative_to(ROOT)): sorted(m for m in _imported_modules(path) if forbidden(m))
        for path in (ROOT / folder).rglob("*.py")
        if any(forbidden(m) for m in _imported_modules(path))
    }
    assert offenders == {}


SDK_OWNER = "gateway/telemetry/setup.py"  # the one module that loads the OpenTelemetry SDK (telemetry on)


def test_only_the_telemetry_setup_loads_the_opentelemetry_sdk() -> None:
    """Spans go through the API (a no-op while telemetry is off); the SDK and the exporter are set up in one place."""
    offenders = {
        str(path.relative_to(ROOT)): sorted(m for m in _imported_modules(path)
                                            if m.startswith(("opentelemetry.sdk", "opentelemetry.exporter")))
        for package in OURS
        for path in (ROOT / package).rglob("*.py")
        if str(path.relative_to(ROOT)) != SDK_OWNER
        and any(m.startswith(("opentelemetry.sdk", "opentelemetry.exporter")) for m in _imported_modules(path))
    }
    assert offenders == {}
    assert any(m.startswith("opentelemetry.sdk") for m in _imported_modules(ROOT / SDK_OWNER))


def test_no_module_reads_shared_data() -> None:
    """Tests and code never read the shared data set beside the repository: a user's machine has none."""
    shared_data = "/".join(("shared", "data"))  # spelled apart so this file does not match itself
    offenders = [
        str(path.relative_to(ROOT))
        for folder in ("agent", "gateway", "adapters", "tests")
        for path in (ROOT / folder).rglob("*.py")
        if shared_data in path.read_text(encoding="utf-8")
    ]
    assert offenders == []


def _inside(here: str, package: str) -> bool:
    """Whether a module in package `here` belongs to `package` (itself or a sub-package of it)."""
    return here == package or here.startswith(package + ".")


def _private_imports(path: Path) -> list[str]:
    """`from pkg.sub._private import x` where `pkg.sub` is another package than the importer's."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    here = path.relative_to(ROOT).parent.as_posix().replace("/", ".")
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0 and node.module.startswith(OURS):
            parts = node.module.split(".")
            for i, part in enumerate(parts):
                if part.startswith("_") and not part.startswith("__") and not _inside(here, ".".join(parts[:i])):
                    found.append(node.module)
            found.extend(f"{node.module}.{alias.name}" for alias in node.names
                         if alias.name.startswith("_") and not alias.name.startswith("__") and not _inside(here, node.module))
    return found


def test_no_private_module_is_imported_across_packages() -> None:
    """A module starting with `_` is its package's own business (STYLE.md §5)."""
    offenders = {
        str(path.relative_to(ROOT)): _private_imports(path)
        for package in OURS
        for path in (ROOT / package).rglob("*.py")
        if _private_imports(path)
    }
    assert offenders == {}


MAX_FUNCTION_LINES = 80
# Functions allowed past the limit, each with its reason.
LONG_FUNCTIONS: dict[str, str] = {
    "gateway/build.py:build_gateway": "the composition root: a flat list of parts, each made by a named builder above it",
}


def test_no_function_over_80_lines() -> None:
    """STYLE.md §4: split anything over 80 lines (or state why here)."""
    long = {}
    for package in OURS:
        for path in (ROOT / package).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.end_lineno:
                    length = node.end_lineno - node.lineno + 1
                    name = f"{path.relative_to(ROOT)}:{node.name}"
                    if length > MAX_FUNCTION_LINES and name not in LONG_FUNCTIONS:
                        long[name] = length
    assert long == {}
