"""The structure the README's "How it works" promises: data flows engine -> front ends. The engine
never imports Qt or the app, and its modules import each other without a loop (a lower module never
reaches up, even inside a function), so each can be read, tested and changed from the bottom up."""
from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def modules(package: str) -> dict[str, Path]:
    out = {}
    for p in (ROOT / package).rglob("*.py"):
        parts = p.relative_to(ROOT).with_suffix("").parts
        out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = p
    return out


def imports(name: str, path: Path, known: dict) -> set[str]:
    """Every module of `known` that `name` imports, at the top or inside a function."""
    pkg = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            base = ".".join(pkg[:len(pkg) - node.level + 1] + ([node.module] if node.module else [])) \
                if node.level else (node.module or "")
            for a in node.names:
                found.add(f"{base}.{a.name}" if f"{base}.{a.name}" in known else base)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
    return found - {name}


def loops(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected parts with more than one module (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in edges[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            part = []
            while True:
                w = stack.pop()
                on.discard(w)
                part.append(w)
                if w == v:
                    break
            if len(part) > 1:
                out.append(sorted(part))

    for v in edges:
        if v not in index:
            visit(v)
    return out


def test_the_engine_never_imports_qt_or_the_app():
    bad = {name: sorted(i for i in imports(name, p, {}) if i.split(".")[0] in ("PySide6", "pyqtgraph", "gui"))
           for name, p in modules("engine").items()}
    assert {k: v for k, v in bad.items() if v} == {}


def test_the_engines_modules_import_each_other_without_a_loop():
    mods = modules("engine")
    edges = {m: {i for i in imports(m, p, mods) if i in mods} for m, p in mods.items()}
    assert loops(edges) == []


def test_the_loop_finder_finds_a_loop():
    assert loops({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert loops({"a": {"b"}, "b": set()}) == []
