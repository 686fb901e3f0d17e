"""The package's shape, held against docs/architecture.md: imports point down the layers and
never form a cycle, no module or class grows past what a newcomer can read, the engine and
the run never import pytest, and every import deferred into a function says why.

Imports are read from the source (every ``import`` statement, those inside functions
included, those under ``if TYPE_CHECKING:`` left out), so a cycle that only lazy imports keep
from breaking at import time is still found.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "pytest_callqa"
MAX_MODULE_LINES = 600
MAX_CLASS_LINES = 400

# Bottom first. A module may import modules of its own layer and of the layers below it;
# the first matching prefix places a module.
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("core", ("pytest_callqa.engine.core", "pytest_callqa._version")),
    ("primitives", ("pytest_callqa.engine.text", "pytest_callqa.engine.patterns",
                    "pytest_callqa.engine.anchors",
                    "pytest_callqa.engine.anchor_units",
                    "pytest_callqa.engine.matching", "pytest_callqa.engine.embeddings",
                    "pytest_callqa.engine.tfidf",
                    "pytest_callqa.engine.pricing", "pytest_callqa.engine.calibration",
                    "pytest_callqa.engine.stats",
                    "pytest_callqa.engine.unicode_ranges", "pytest_callqa.engine.lexicon")),
    ("llm plumbing", ("pytest_callqa.engine.llm",)),
    ("tasks", ("pytest_callqa.engine.tasks",)),
    ("registry", ("pytest_callqa.engine.registry", "pytest_callqa.engine.policy")),
    ("judges and generation", ("pytest_callqa.engine.judges", "pytest_callqa.engine.generate")),
    ("evaluate", ("pytest_callqa.engine.evaluate",)),
    ("loading", ("pytest_callqa.engine.loading", "pytest_callqa.engine.case_schema")),
    ("scorecard and report", ("pytest_callqa.engine.scorecard", "pytest_callqa.engine.report",
                              "pytest_callqa.engine.runs", "pytest_callqa.engine.ranking")),
    ("engine package", ("pytest_callqa.engine",)),
    ("run pipeline", ("pytest_callqa.run", "pytest_callqa.outputs", "pytest_callqa.session")),
    ("plugin", ("pytest_callqa",)),
)
PYTEST_FREE = ("pytest_callqa.engine", "pytest_callqa.run", "pytest_callqa.outputs",
               "pytest_callqa.session", "pytest_callqa.listing")


@dataclass(frozen=True)
class Import:
    source: str
    target: str
    line: int
    deferred: bool
    commented: bool


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def _type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _statements(tree: ast.AST) -> list[tuple[ast.Import | ast.ImportFrom, bool]]:
    """Every import statement that runs, with whether it is inside a function."""
    found: list[tuple[ast.Import | ast.ImportFrom, bool]] = []

    def visit(node: ast.AST, deferred: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _type_checking(child):
                for stmt in child.orelse:
                    visit(stmt, deferred)
                continue
            if isinstance(child, (ast.Import, ast.ImportFrom)):
                found.append((child, deferred))
            visit(child, deferred or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)))

    visit(tree, False)
    return found


def imports(known: dict[str, Path]) -> list[Import]:
    """Every runtime import of one of the package's modules by another."""
    edges = []
    for name, path in known.items():
        lines = path.read_text(encoding="utf-8").splitlines()
        tree = ast.parse("\n".join(lines))
        package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
        for stmt, deferred in _statements(tree):
            previous = lines[stmt.lineno - 2].strip() if stmt.lineno > 1 else ""
            commented = previous.startswith(("#", "from ", "import "))
            targets: list[str] = []
            if isinstance(stmt, ast.Import):
                targets = [a.name for a in stmt.names if a.name in known]
            else:
                base = package[:len(package) - stmt.level + 1] if stmt.level else []
                module = ".".join([*base, *([stmt.module] if stmt.module else [])])
                subs = [f"{module}.{a.name}" for a in stmt.names if f"{module}.{a.name}" in known]
                targets = subs or ([module] if module in known else [])
            edges += [Import(name, t, stmt.lineno, deferred, commented) for t in targets
                      if t != name]
    return edges


def layer_of(module: str) -> int:
    for rank, (_title, prefixes) in enumerate(LAYERS):
        if any(module == p or module.startswith(p + ".") for p in prefixes):
            return rank
    raise AssertionError(f"{module} belongs to no layer: add it to LAYERS and the docs")


def cycles(edges: list[Import]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    graph: dict[str, set[str]] = {}
    for edge in edges:
        graph.setdefault(edge.source, set()).add(edge.target)
        graph.setdefault(edge.target, set())
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def connect(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph[node]):
            if nxt not in index:
                connect(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            connect(node)
    return found


KNOWN = modules()
EDGES = imports(KNOWN)


def test_the_reader_sees_every_kind_of_import() -> None:
    # The checks below are only as good as this reading: a top-level import, a deferred
    # one and a relative one of each kind must all be among the edges.
    pairs = {(e.source, e.target, e.deferred) for e in EDGES}
    assert ("pytest_callqa.engine.evaluate", "pytest_callqa.engine.registry", False) in pairs
    assert ("pytest_callqa.run.services", "pytest_callqa.engine.registry", True) in pairs
    assert ("pytest_callqa.engine.tasks.agent", "pytest_callqa.engine.tasks.agent_calls",
            False) in pairs
    assert not any(e.target == "pytest_callqa.engine.core.context"
                   and e.source == "pytest_callqa.engine.tasks.base" and e.deferred
                   for e in EDGES)


def test_the_cycle_finder_finds_a_cycle() -> None:
    a_b = Import("a", "b", 1, False, False)
    b_c = Import("b", "c", 1, True, False)
    c_a = Import("c", "a", 1, True, False)
    assert cycles([a_b, b_c, c_a]) == [["a", "b", "c"]]
    assert cycles([a_b, b_c]) == []


def test_no_import_cycle() -> None:
    assert cycles(EDGES) == []


def test_imports_point_down_the_layers() -> None:
    upward = [
        f"{e.source} (layer {LAYERS[layer_of(e.source)][0]!r}) imports {e.target} "
        f"(layer {LAYERS[layer_of(e.target)][0]!r}) at line {e.line}"
        for e in EDGES if layer_of(e.target) > layer_of(e.source)
    ]
    assert upward == []


def test_every_deferred_import_says_why() -> None:
    """An import inside a function is there to keep start-up light (or, in the test helpers,
    to load a module once when it runs as ``__main__``), never to hide a cycle; a comment on
    the line above says which. Imports of the package and of other libraries alike."""
    silent = []
    for name, path in KNOWN.items():
        lines = path.read_text(encoding="utf-8").splitlines()
        for stmt, deferred in _statements(ast.parse("\n".join(lines))):
            previous = lines[stmt.lineno - 2].strip()
            if deferred and not previous.startswith(("#", "from ", "import ")):
                silent.append(f"{name}:{stmt.lineno}")
    assert silent == []


@pytest.mark.parametrize("prefix", PYTEST_FREE)
def test_the_engine_and_the_run_never_import_pytest(prefix: str) -> None:
    offenders = []
    for name, path in KNOWN.items():
        if not (name == prefix or name.startswith(prefix + ".")):
            continue
        for stmt, _deferred in _statements(ast.parse(path.read_text(encoding="utf-8"))):
            names = ([a.name for a in stmt.names] if isinstance(stmt, ast.Import)
                     else [stmt.module or ""])
            if any(n.split(".")[0] in ("pytest", "_pytest") for n in names):
                offenders.append(f"{name}:{stmt.lineno}")
    assert offenders == []


def test_no_module_is_too_long() -> None:
    long = {name: n for name, path in KNOWN.items()
            if (n := len(path.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES}
    assert long == {}


def test_no_class_is_too_long() -> None:
    long = {}
    for name, path in KNOWN.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef) and node.end_lineno is not None:
                size = node.end_lineno - node.lineno + 1
                if size > MAX_CLASS_LINES:
                    long[f"{name}.{node.name}"] = size
    assert long == {}


def test_every_module_is_in_the_architecture_document() -> None:
    text = (PACKAGE.parent / "docs" / "architecture.md").read_text(encoding="utf-8")
    missing = []
    for name, path in KNOWN.items():
        if path.name == "__init__.py" and name != "pytest_callqa":
            continue
        shown = path.relative_to(PACKAGE.parent).as_posix()
        if shown not in text:
            missing.append(shown)
    assert missing == []
