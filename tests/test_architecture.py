"""The layout shows the architecture: no import cycle, no arrow pointing up, Click only in
scripts/ (docs/DESIGN-NOTES.md "Package layout" and README "Where things live").

The import graph is read from the source with ``ast`` (module-level and function-level
imports alike), so a lazy import cannot hide an arrow.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib  # type: ignore[no-redef]

ROOT = Path(__file__).resolve().parent.parent
if not (ROOT / "pyproject.toml").is_file():  # pragma: no cover - running from an sdist
    pytest.skip("no pyproject.toml", allow_module_level=True)

#: Floors, lowest first: a module may import its own floor and the floors below it.
#: The core (paths, formats, config, git, secrets, the index) knows nothing of hooks; the
#: hooks (what git runs, the rules a commit must pass) know nothing of the services above
#: them; the services (commit, transcript, context, lifecycle) may run the hooks' rules
#: in-process; the CLI sits on top and nothing imports it.
FLOORS: tuple[tuple[str, ...], ...] = (
    (
        "memrepo",
        "memrepo.errors",
        "memrepo.atomic",
        "memrepo.locks",
        "memrepo.yamlsafe",
        "memrepo.resources",
        "memrepo.layout",
        "memrepo.documents",
        "memrepo.config",
        "memrepo.repo",
        "memrepo.git",
        "memrepo.secrets",
        "memrepo.topics",
        "memrepo.llm",
        "memrepo.index",
    ),
    ("memrepo.hooks",),
    (
        "memrepo.commit",
        "memrepo.transcript",
        "memrepo.context",
        "memrepo.lifecycle",
        "memrepo.agents",
        "memrepo.scaffold",
        "memrepo.doctor",
    ),
    ("memrepo.scripts", "memrepo.__main__"),
)


def _modules() -> dict[str, Path]:
    """Every module of the distribution: dotted name -> file (package-dir remap applied)."""
    dirs = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"][
        "package-dir"
    ]
    found: dict[str, Path] = {}
    for package, folder in dirs.items():
        base = ROOT / folder
        for py in base.rglob("*.py"):
            rel = py.relative_to(base).with_suffix("").parts
            if rel[-1] == "__init__":
                rel = rel[:-1]
            name = ".".join((package, *rel))
            if package == "memrepo" and rel and rel[0] in ("hooks", "scripts"):
                continue
            found[name] = py
    return found


def _imports(modules: dict[str, Path]) -> dict[str, set[str]]:
    """module -> the memrepo modules it imports (a name imported from a package that is a
    submodule counts as that submodule)."""
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        is_pkg = path.name == "__init__.py"
        edges: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    parts = name.split(".")
                    base_parts = parts if is_pkg else parts[:-1]
                    base_parts = base_parts[: len(base_parts) - (node.level - 1)]
                    tail = node.module.split(".") if node.module else []
                    module = ".".join([*base_parts, *tail])
                else:
                    module = node.module or ""
                for alias in node.names:
                    sub = f"{module}.{alias.name}"
                    targets.append(sub if sub in modules else module)
            for target in targets:
                while target and target not in modules:
                    target = target.rpartition(".")[0]
                if target.startswith("memrepo") and target != name:
                    edges.add(target)
        graph[name] = edges
    return graph


MODULES = _modules()
GRAPH = _imports(MODULES)


def _floor(module: str) -> int:
    best, floor = "", -1
    for i, names in enumerate(FLOORS):
        for prefix in names:
            if (module == prefix or module.startswith(prefix + ".")) and len(prefix) > len(best):
                best, floor = prefix, i
    return floor


def test_every_module_has_a_floor() -> None:
    assert {m for m in MODULES if _floor(m) < 0} == set()


def test_no_import_points_up_a_floor() -> None:
    upward = sorted(
        f"{src} -> {dst}"
        for src, dsts in GRAPH.items()
        for dst in dsts
        if _floor(dst) > _floor(src) and dst != "memrepo"
    )
    assert upward == []


def test_no_import_cycle() -> None:
    """Tarjan's strongly connected components: every one must be a single module."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in GRAPH.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for v in sorted(GRAPH):
        if v not in index:
            visit(v)
    assert cycles == []


#: Calls that write files or run SQL: domain work that belongs below the CLI.
WRITES = frozenset(
    {"execute", "executemany", "executescript", "write_text", "write_bytes", "atomic_write"}
)


def test_click_modules_hold_no_sql_and_write_no_files() -> None:
    found = []
    for name, path in MODULES.items():
        if not name.startswith("memrepo.scripts."):
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Call):
                func = node.func
                called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
                if called in WRITES:
                    found.append(f"{path.relative_to(ROOT)}:{node.lineno} {called}()")
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                names = [a.name for a in node.names] if isinstance(node, ast.Import) else [
                    node.module or ""
                ]
                if "sqlite3" in names:
                    found.append(f"{path.relative_to(ROOT)}:{node.lineno} import sqlite3")
    assert found == []


def test_the_checker_sees_lazy_and_relative_imports() -> None:
    """The graph is only worth its asserts if it sees what a reader might miss."""
    assert "memrepo.index.indexer" in GRAPH["memrepo.hooks.post_commit"]  # function-level
    importers = [m for m in MODULES if m.startswith("memrepo.transcript.importers.")]
    assert any("memrepo.transcript.importers._common" in GRAPH[m] for m in importers)


def test_memory_db_is_opened_through_one_sqlite_library() -> None:
    """Two SQLite libraries in one process drop each other's POSIX locks when either closes
    the file: ``sqlite3`` and ``apsw`` are imported by :mod:`memrepo.index.db` alone, and
    every other module opens memory.db through it."""
    found = []
    for name, path in MODULES.items():
        if name == "memrepo.index.db":
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [node.module or ""]
            else:
                continue
            if {n.split(".")[0] for n in names} & {"sqlite3", "apsw", "pysqlite3"}:
                found.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert found == []
