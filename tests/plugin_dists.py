"""Plugins as an installer leaves them: a `*.dist-info` with `entry_points.txt` and a module, on a sys.path entry.

`importlib.metadata` finds entry points by reading `*.dist-info` directories on
`sys.path`, which is exactly what `pip install` writes. `installed_dist` writes
one by hand (fast; for plugins that are meant to fail), `on_sys_path` puts a
directory (such as a `pip install --target` one) on the path for a test and
takes it away again, with the modules imported from it.
"""
from __future__ import annotations

import importlib
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def on_sys_path(site: Path) -> Iterator[Path]:
    """`site` first on sys.path for the block; modules imported from it are forgotten afterwards."""
    sys.path.insert(0, str(site))
    importlib.invalidate_caches()
    try:
        yield site
    finally:
        sys.path.remove(str(site))
        for name, module in list(sys.modules.items()):
            if str(getattr(module, "__file__", "") or "").startswith(str(site)):
                del sys.modules[name]
        importlib.invalidate_caches()


@contextmanager
def installed_dist(
    site: Path, dist: str, entry_points: Mapping[str, Mapping[str, str]], modules: Mapping[str, str]
) -> Iterator[Path]:
    """A distribution `dist` with these entry points (group → name → "module:attr") and module sources."""
    info = site / f"{dist.replace('-', '_')}-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 1.0\n", encoding="utf-8")
    lines: list[str] = []
    for group, points in entry_points.items():
        lines.append(f"[{group}]")
        lines.extend(f"{name} = {value}" for name, value in points.items())
        lines.append("")
    (info / "entry_points.txt").write_text("\n".join(lines), encoding="utf-8")
    for module, source in modules.items():
        (site / f"{module}.py").write_text(source, encoding="utf-8")
    with on_sys_path(site):
        yield site
