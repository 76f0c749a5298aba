"""The layer contract in pyproject.toml (`[tool.importlinter]`) holds, and it is a real check: the same
tree with one deliberately upward import breaks it, naming the import."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LINT = "import sys; from importlinter.cli import lint_imports; sys.exit(lint_imports(no_cache=True, no_logo=True))"


def _lint(where: Path) -> subprocess.CompletedProcess[str]:
    # `-c` puts the working directory first on sys.path: the `harness` checked is the one in `where`.
    return subprocess.run([sys.executable, "-c", LINT], cwd=where, capture_output=True, text=True, timeout=120)


def test_no_module_imports_a_layer_above_its_own() -> None:
    done = _lint(ROOT)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 kept, 0 broken" in done.stdout


def test_an_upward_import_breaks_the_contract(tmp_path: Path) -> None:
    shutil.copytree(ROOT / "harness", tmp_path / "harness", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    streams = tmp_path / "harness" / "sim" / "streams.py"
    streams.write_text(streams.read_text() + "\nfrom harness.report import plots  # the clock reaching for a report\n")
    done = _lint(tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "harness.sim.streams -> harness.report.plots" in done.stdout
    assert "0 kept, 1 broken" in done.stdout


def _circles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(edges):
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_no_two_modules_import_each_other_in_a_circle_type_only_imports_included() -> None:
    # The layer contract covers top-level packages; this covers every module, inside a package too.
    import grimp

    graph = grimp.build_graph("harness", cache_dir=None, exclude_type_checking_imports=False)
    edges = {module: set(graph.find_modules_directly_imported_by(module)) for module in graph.modules}
    assert _circles(edges) == []
    assert _circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]  # the check checks
