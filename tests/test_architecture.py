"""The layout shows the architecture: no import cycle, no arrow pointing up, Click only in
scripts/, no module or function too long to read (docs/design.md "Package layout").

The import graph is read from the source with ``ast`` (module-level and function-level
imports alike), so a lazy import cannot hide an arrow.
"""

from __future__ import annotations

import ast
import io
import re
import sys
import tokenize
from collections.abc import Iterator
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
#: The core (paths, formats, config, git, secrets, the index) knows nothing of the rest;
#: the resident server (``memory serve``, for the optional sentence model) sits on it;
#: the hooks (what git runs, the rules a commit must pass) know nothing of the services
#: above them; the services are ordered too, so no folder-level loop can come back:
#: commit < transcript < context < scaffold (the templates lifecycle writes from) <
#: lifecycle < agents; the CLI sits on top and nothing imports it.
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
        "memrepo.entries",
        "memrepo.config",
        "memrepo.repo",
        "memrepo.git",
        "memrepo.secrets",
        "memrepo.topics",
        "memrepo.llm",
        "memrepo.index",
    ),
    ("memrepo.resident",),
    ("memrepo.hooks",),
    ("memrepo.commit",),
    ("memrepo.transcript",),
    ("memrepo.context",),
    ("memrepo.scaffold",),
    ("memrepo.lifecycle",),
    ("memrepo.agents", "memrepo.doctor"),
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


#: A product module is read whole: past this it holds more than one concept.
MAX_MODULE_LINES = 600
#: A function is read at once: past this it hides a helper worth a name.
MAX_FUNCTION_LINES = 80


def test_no_product_module_is_longer_than_the_cap() -> None:
    long = sorted(
        f"{path.relative_to(ROOT)}: {n} lines"
        for path in MODULES.values()
        if (n := path.read_text().count("\n")) > MAX_MODULE_LINES
    )
    assert long == []


def test_no_function_is_longer_than_the_cap() -> None:
    long = []
    for path in MODULES.values():
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                n = (node.end_lineno or node.lineno) - node.lineno + 1
                if n > MAX_FUNCTION_LINES:
                    long.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.name}: {n} lines")
    assert sorted(long) == []


#: What a measurement diary looks like in a comment: before/after arrows between figures,
#: A/B ratios, latency percentiles, recall figures. A comment says what a constant bounds
#: and names the bench that measures it (``bench/``); the figures live in bench/results/.
DIARY = re.compile(
    r"\d(?:[\d.,]*)\s*(?:ms|µs|s|%|x|MB|GB)?\s*(?:->|→)\s*\d"
    r"|\bB\s*/\s*A\b|\bp50\b|\bp95\b|\bR@\d|LoCoMo\b[^.\n]*\d\d"
)


def _comments_and_docstrings(path: Path) -> Iterator[tuple[int, str]]:
    src = path.read_text()
    for tok in tokenize.generate_tokens(io.StringIO(src).readline):
        if tok.type == tokenize.COMMENT:
            yield tok.start[0], tok.string
        elif tok.type == tokenize.STRING and tok.string.lstrip("rbuRBU").startswith(
                ('"""', "'''")):
            for i, line in enumerate(tok.string.split("\n")):
                yield tok.start[0] + i, line


def test_comments_keep_no_measurement_diary() -> None:
    found = [
        f"{path.relative_to(ROOT)}:{line}: {text.strip()[:80]}"
        for path in MODULES.values()
        for line, text in _comments_and_docstrings(path)
        if DIARY.search(text)
    ]
    assert found == []


#: The only modules that import memrepo's own modules inside a function, each with why:
#: a start-up cost a fast path must not pay (the git hooks, the agent hooks and their
#: detached worker, ``capture append``, ``memory search``, ``memory --help``). Every other
#: module imports at the top, where a reader sees its dependencies.
LAZY_IMPORTS: dict[str, str] = {
    "memrepo.compression": "the post-commit hook inflates archives without the config "
    "(YAML): load_config only when a decompression cap is looked up",
    "memrepo.config": "topics (and `regex`) only when a topic regex or cron setting is "
    "validated; pre-commit and search load the config without it",
    "memrepo.repo": "capture append opens the repo without its config (YAML)",
    "memrepo.worktree": "agent hooks read plain files; compression only for a .gz file",
    "memrepo.context.compiler": "the SessionStart brief needs neither the watchers nor the "
    "link index; only the prompt hook loads them",
    "memrepo.context.watchers.gate": "the LLM layer only when a topic reaches Tier 3",
    "memrepo.index.anchors": "git only when a signalled file is gone",
    "memrepo.index.docmeta": "the post-commit indexer loads documents (YAML) only for a "
    "file with YAML front matter",
    "memrepo.index.embedders": "the word list and the int8 model loader only when a model "
    "embedder is used",
    "memrepo.index.links": "the pre-commit link check parses links without the index "
    "database",
    "memrepo.index.remote": "every prompt hook asks the resident through it: git's "
    "locator and the embedders only when no .git says where the state is, or a search "
    "needs a query embedder",
    "memrepo.index.search": "vectors only when the index has them, the file scanner only "
    "when there is no index",
    "memrepo.hooks.check_links": "the index database only when a staged wikilink must be "
    "resolved against it",
    "memrepo.hooks.check_topics": "topics (and `regex`) only when a topic file is staged",
    "memrepo.hooks.commit_msg": "the validation engine (config, YAML, git) only when the "
    "message holds a secret",
    "memrepo.hooks.engine": "git and the redactor only when a validator run alone asks git",
    "memrepo.hooks.post_commit": "every git hook imports it through dispatch: the indexer "
    "only inside post-commit, the catch-up only when chunks wait",
    "memrepo.agents.events": "a capture hook detaches after one stat, without memrepo.repo",
    "memrepo.agents.hook_client": "an installed hook imports C modules only; mcp_front (to "
    "start a resident) only when none answers",
    "memrepo.agents.mcp_front": "memory mcp relays to the resident server on the standard "
    "library alone: memrepo only to start a resident when none answers",
    "memrepo.agents.recall": "Stop and SessionEnd import it through events: the compiler "
    "and the index only when a brief or recall runs",
    "memrepo.agents.state": "health only when memory doctor asks for the hook checks",
    "memrepo.agents.worker": "the worker lowers its priority before importing its work; "
    "each event loads only what it runs",
    "memrepo.transcript.capture": "capture append: the config, the encoded-secret scan and "
    "the commit only for start, end and imports",
    "memrepo.transcript.follow": "the prompt hook reads load_progress only; the follower's "
    "modules load in the worker",
    "memrepo.transcript.session": "capture append: the config only for the allowlist",
    "memrepo.transcript.tail": "capture append: the config only for an old state file",
    "memrepo.scaffold": "the SessionEnd worker imports it through lifecycle.journal: "
    "commit.merge only when init lays a repo down",
    "memrepo.doctor": "memory --help imports the command: commit.merge only for its check",
    "memrepo.scripts.fastpath": "the entry of every call: each path imports only its own",
    "memrepo.scripts.search": "search is a fast path: index.links only for --links",
    **{
        f"memrepo.scripts.{name}": "memory --help imports every command module: its "
        "library loads only when the command runs"
        for name in ("capture", "commit", "compile", "hook", "mcp", "merge_driver",
                     "schedule", "serve", "sync", "topics", "trim", "verify")
    },
}


def _function_level_imports(name: str, path: Path) -> int:
    count = 0
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for sub in node.body:
                for inner in ast.walk(sub):
                    if isinstance(inner, ast.ImportFrom):
                        own = inner.level > 0 or (inner.module or "").startswith("memrepo")
                    elif isinstance(inner, ast.Import):
                        own = any(a.name.startswith("memrepo") for a in inner.names)
                    else:
                        continue
                    count += own
    return count


def test_function_level_imports_only_where_listed() -> None:
    lazy = {name for name, path in MODULES.items() if _function_level_imports(name, path)}
    assert sorted(lazy - LAZY_IMPORTS.keys()) == [], "hoist them, or list them with a reason"
    assert sorted(LAZY_IMPORTS.keys() - lazy) == [], "listed but no longer lazy: unlist"
