"""The house stays clean (docs/architecture.md): no import circle among our
modules, counting imports inside functions (they hide a circle, they do not
remove it) and imports for type checking only (a model that needs the
providers to be read is not separate from them); no import from a lower
top-level folder into a higher one; no file of the orchestrator outside an
edge system's own package names the system; and every package imports first
in a fresh interpreter."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
# top-level folder -> (where its packages are, its packages, its layer: a folder imports only lower layers or its own)
FOLDERS = {
    "smec-edge": ("smec-edge", ("smec_edge",), 0),
    "edge-systems": ("edge-systems", ("mosaic", "mecanic", "pdcell"), 0),
    "srsran-integration": ("srsran-integration", ("srsran_integration",), 0),
    "workloads": (".", ("workloads",), 1),
    "continuum": (".", ("continuum",), 2),
}


def _modules() -> dict[str, tuple[str, Path]]:
    mods = {}
    for folder, (root, packages, _) in FOLDERS.items():
        for pkg in packages:
            for p in (REPO / root / pkg).rglob("*.py"):
                parts = list(p.relative_to(REPO / root).with_suffix("").parts)
                mods[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = (folder, p)
    return mods


def _import_graph() -> dict[str, set[str]]:
    mods = _modules()

    def known(name: str) -> str | None:
        while name and name not in mods:
            name = name.rpartition(".")[0]
        return name or None

    graph = {}
    for m, (_, p) in mods.items():
        deps = set()
        for n in ast.walk(ast.parse(p.read_text())):
            if isinstance(n, ast.Import):
                deps |= {k for a in n.names if (k := known(a.name))}
            elif isinstance(n, ast.ImportFrom) and n.module and n.level == 0:
                deps |= {k for a in n.names if (k := known(f"{n.module}.{a.name}"))}
        graph[m] = deps - {m}
    return graph


def test_no_import_cycles():
    graph = _import_graph()
    assert len(graph) > 100 and graph["continuum.config.resolve"] and graph["mosaic.executor"], "the scan found the modules"
    sys.setrecursionlimit(10_000)
    state: dict[str, int] = {}
    path: list[str] = []

    def visit(m: str) -> None:
        state[m] = 1
        path.append(m)
        for d in sorted(graph[m]):
            if state.get(d) == 1:
                pytest.fail("import cycle: " + " -> ".join(path[path.index(d):] + [d]))
            if d not in state:
                visit(d)
        path.pop()
        state[m] = 2

    for m in sorted(graph):
        if m not in state:
            visit(m)


def test_the_config_model_imports_neither_the_plan_nor_providers_nor_edge_systems():
    graph = _import_graph()
    seen, todo = set(), [m for m in graph if m.startswith("continuum.config")]
    while todo:
        m = todo.pop()
        if m not in seen:
            seen.add(m)
            todo += graph[m]
    assert not {m for m in seen if m.startswith(("continuum.network", "continuum.providers", "continuum.edge"))}, seen


def test_no_folder_imports_a_higher_one():
    mods, graph = _modules(), _import_graph()
    upward = [f"{m} -> {d}" for m, deps in graph.items() for d in deps
              if FOLDERS[mods[d][0]][2] > FOLDERS[mods[m][0]][2]]
    assert not upward, "an import from a lower folder into a higher one (a shared contract belongs in the lower): " + ", ".join(upward)


def _registered_systems() -> list[str]:
    """The names the registry holds: a system registered tomorrow is guarded the same day."""
    from continuum.edge.registry import SYSTEMS
    assert {"smec", "mosaic", "mecanic", "pdcell", "tutti"} <= set(SYSTEMS), sorted(SYSTEMS)
    return sorted(SYSTEMS)


# The shared cell's MAC schedulers are the cell's own: "smec" and "tutti" there name the schedulers the
# papers describe (continuum/config/raw.py's UPLINK_SCHEDULERS and DOWNLINK_SCHEDULERS), not the edge
# systems; as values they may appear where the cell's configuration is read, and nowhere else.
CELL_SCHEDULER_FILES = ("continuum/config/raw.py", "continuum/config/cell.py")


def test_the_orchestrator_names_no_edge_system_outside_its_package():
    """Outside continuum/edge/<system>/ and the registry, no name, import, key, file name or module
    path says a registered system's name: they may appear in prose only (docstrings, comments, messages
    and descriptions, which credit the papers), and as the shared cell's scheduler names (the cell's
    MAC schedulers, not the edge systems) where the cell defines them."""
    names = _registered_systems()
    pattern = re.compile("|".join(names), re.I)
    own = tuple(f"continuum/edge/{n}/" for n in names) + ("continuum/edge/registry.py",)
    from continuum.config.raw import DOWNLINK_SCHEDULERS, UPLINK_SCHEDULERS
    schedulers = set(DOWNLINK_SCHEDULERS) | set(UPLINK_SCHEDULERS)
    found = []
    for p in sorted((REPO / "continuum").rglob("*.py")):
        rel = p.relative_to(REPO).as_posix()
        if rel.startswith(own):
            continue
        tree = ast.parse(p.read_text())
        docs = {id(n.body[0].value) for n in ast.walk(tree)
                if isinstance(n, (ast.Module, ast.FunctionDef, ast.ClassDef, ast.AsyncFunctionDef)) and n.body
                and isinstance(n.body[0], ast.Expr) and isinstance(n.body[0].value, ast.Constant)}
        for n in ast.walk(tree):
            text = None
            if isinstance(n, ast.Name):
                text = n.id
            elif isinstance(n, ast.Attribute):
                text = n.attr
            elif isinstance(n, ast.alias):
                text = n.name
            elif isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in docs \
                    and not re.search(r"\s", n.value):  # a key, file or module name, not prose
                if n.value in schedulers and rel.startswith(CELL_SCHEDULER_FILES):
                    continue
                text = n.value
            if text and pattern.search(text):
                found.append(f"{rel}:{getattr(n, 'lineno', '?')}: {text[:60]!r}")
    assert not found, "\n".join(found)


def test_every_package_imports_first_in_a_fresh_interpreter():
    """A circle that the scan above cannot see (an import made by a name at run time) shows as an
    ImportError when a package is the first thing imported."""
    packages = sorted({m for m, (_, p) in _modules().items() if p.name == "__init__.py"
                       and not m.startswith("workloads.")})  # the apps' packages load their ML stacks
    code = "import importlib, sys\nfor m in sys.argv[1:]:\n    importlib.import_module(m)\n"
    failed = []
    for m in packages:
        p = subprocess.run([sys.executable, "-c", code, m], capture_output=True, text=True, timeout=60)
        if p.returncode:
            failed.append(f"{m}: {p.stderr.strip().splitlines()[-1]}")
    assert not failed, "\n".join(failed)
