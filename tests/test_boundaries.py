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
}


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
