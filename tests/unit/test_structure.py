"""The structure README.md's map promises: data flows engine -> front ends. The engine
never imports Qt, the app (gui/) or the command line (cli/); the two front ends never import each other
(main.py, the entry point, is where they meet). engine/ is a stack of stage packages, each importing only the ones
below it (LAYERS); no module anywhere reaches into another package's private names; the engine's
and the app's modules import each other without a loop (a lower module never reaches up, even
inside a function), so each can be read, tested and changed from the bottom up."""
from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# engine/'s stage packages, bottom up: each may import the ones before it, never one after it.
LAYERS = ("util", "devices", "model", "schedules", "kernels", "planner", "measure", "report", "layout", "jobs")
# the app's Qt-free models (napari's evented models): the views subscribe to them, never the reverse
GUI_MODELS = ("gui.events", "gui.evented", "gui.document", "gui.view_state", "gui.workspace", "gui.selection",
              "gui.scope_view", "gui.messages", "gui.app_model", "gui.action_table")


def modules(package: str) -> dict[str, Path]:
    out = {}
    for p in (ROOT / package).rglob("*.py"):
        parts = p.relative_to(ROOT).with_suffix("").parts
        out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = p
    return out


def _type_checking(node) -> bool:
    t = node.test
    return isinstance(t, ast.Name) and t.id == "TYPE_CHECKING" or isinstance(t, ast.Attribute) and t.attr == "TYPE_CHECKING"


def _nodes(tree):
    """Every node of `tree`, less what sits under `if TYPE_CHECKING:` (annotations only, never run)."""
    todo = [tree]
    while todo:
        n = todo.pop()
        yield n
        for c in ast.iter_child_nodes(n):
            if isinstance(c, ast.If) and _type_checking(c):
                todo.extend(c.orelse)
            else:
                todo.append(c)


def _base(name: str, path: Path, node: ast.ImportFrom) -> str:
    pkg = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    if not node.level:
        return node.module or ""
    return ".".join(pkg[:len(pkg) - node.level + 1] + ([node.module] if node.module else []))


def imports(name: str, path: Path, known: dict) -> set[str]:
    """Every module of `known` that `name` imports, at the top or inside a function."""
    found = set()
    for node in _nodes(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            base = _base(name, path, node)
            for a in node.names:
                found.add(f"{base}.{a.name}" if f"{base}.{a.name}" in known else base)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
    return found - {name}


def private_reaches(name: str, path: Path, known: dict) -> list[str]:
    """`from X import _y` and `X._y` where X is a module of another package than `name`'s."""
    def package(m: str) -> str:
        parts = m.split(".")
        return ".".join(parts[:2]) if parts[0] == "engine" else parts[0]

    mine, bound, out = package(name), {}, []
    tree = ast.parse(path.read_text())
    for node in _nodes(tree):
        if isinstance(node, ast.ImportFrom):
            base = _base(name, path, node)
            for a in node.names:
                full = f"{base}.{a.name}"
                if full in known:
                    bound[a.asname or a.name] = full
                elif a.name.startswith("_") and not a.name.startswith("__") and base in known and package(base) != mine:
                    out.append(f"from {base} import {a.name}")
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name in known and a.asname:
                    bound[a.asname] = a.name
    for node in _nodes(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in bound \
                and node.attr.startswith("_") and not node.attr.startswith("__") \
                and package(bound[node.value.id]) != mine:
            out.append(f"{bound[node.value.id]}.{node.attr}")
    return out


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


def layer_breaks(edges: dict[str, set[str]]) -> list[str]:
    """Imports from an engine stage package to one above it (or to a flat module outside LAYERS)."""
    def layer(m: str):
        parts = m.split(".")
        return LAYERS.index(parts[1]) if len(parts) > 1 and parts[1] in LAYERS else None

    out = []
    for m, deps in edges.items():
        for d in deps:
            lm, ld = layer(m), layer(d)
            if d != "engine" and (ld is None or (lm is not None and ld > lm)):
                out.append(f"{m} -> {d}")
    return sorted(out)


def test_the_engine_never_imports_qt_or_the_app():
    bad = {name: sorted(i for i in imports(name, p, {})
                        if i.split(".")[0] in ("PySide6", "pyqtgraph", "gui", "cli", "main"))
           for name, p in modules("engine").items()}
    assert {k: v for k, v in bad.items() if v} == {}


def test_the_command_line_and_the_app_never_import_each_other():
    """cli/ is a front end beside gui/: it imports the engine, never the app or Qt (what it needs of the app,
    main.py hands over: cli.App); the app never imports the command line or main.py."""
    def bad(package: str, banned: tuple) -> dict:
        found = {name: sorted(i for i in imports(name, p, {}) if i.split(".")[0] in banned)
                 for name, p in modules(package).items()}
        return {k: v for k, v in found.items() if v}

    assert modules("cli") and bad("cli", ("gui", "main", "PySide6", "pyqtgraph")) == {}
    assert bad("gui", ("cli", "main")) == {}
    assert imports("main", ROOT / "main.py", {}) >= {"cli", "gui.app", "gui.chart_export"}   # where they meet


def test_the_command_lines_modules_import_each_other_without_a_loop():
    mods = modules("cli")
    edges = {m: {i for i in imports(m, p, mods) if i in mods} for m, p in mods.items()}
    assert loops(edges) == []


def test_the_engine_is_a_stack_of_stage_packages():
    mods = modules("engine")
    flat = sorted(m for m in mods if m.count(".") == 1 and m.split(".")[1] not in LAYERS)
    assert flat == [], "every engine module lives in a stage package"
    assert sorted(m.split(".")[1] for m in mods if m.count(".") == 1) == sorted(LAYERS)
    edges = {m: {i for i in imports(m, p, mods) if i in mods} for m, p in mods.items()}
    assert layer_breaks(edges) == []


def test_the_engines_modules_import_each_other_without_a_loop():
    mods = modules("engine")
    edges = {m: {i for i in imports(m, p, mods) if i in mods} for m, p in mods.items()}
    assert loops(edges) == []


def test_the_apps_modules_import_each_other_without_a_loop():
    mods = modules("gui")
    edges = {m: {i for i in imports(m, p, mods) if i in mods} for m, p in mods.items()}
    assert loops(edges) == []


def test_the_apps_models_are_qt_free_and_import_no_view():
    mods = modules("gui")
    for m in GUI_MODELS:
        deps = imports(m, mods[m], mods)
        assert not {d for d in deps if d.split(".")[0] in ("PySide6", "pyqtgraph")}, m
        assert {d for d in deps if d in mods} <= set(GUI_MODELS), m


def test_no_module_reaches_into_another_packages_private_names():
    known = {**modules("engine"), **modules("gui"), **modules("cli"), "main": ROOT / "main.py"}
    bad = {m: private_reaches(m, p, known) for m, p in known.items()}
    assert {k: v for k, v in bad.items() if v} == {}


def test_the_checks_find_what_they_look_for():
    assert loops({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert loops({"a": {"b"}, "b": set()}) == []
    assert layer_breaks({"engine.model.loader": {"engine.measure.runner", "engine.util.errors"},
                         "engine.planner.dp": {"engine.flat"}}) == \
        ["engine.model.loader -> engine.measure.runner", "engine.planner.dp -> engine.flat"]
    src = ROOT / "tests" / "data" / "_reach_probe.py"
    src.parent.mkdir(exist_ok=True)
    src.write_text("from engine.measure import runner\nfrom engine.util.cache_dir import _x\n"
                   "runner._key\nrunner.key\nif TYPE_CHECKING:\n    runner._hidden\n")
    try:
        known = {"engine.measure.runner": None, "engine.measure": None, "engine.util.cache_dir": None}
        assert private_reaches("engine.report.probe", src, known) == \
            ["from engine.util.cache_dir import _x", "engine.measure.runner._key"]
        assert private_reaches("engine.measure.probe", src, known) == ["from engine.util.cache_dir import _x"]
    finally:
        src.unlink()


def test_tests_live_in_their_tier_folder_and_import_no_other_test_module():
    """A test's tier is its folder (tests/unit, tests/gui, tests/integration; conftest.py): no test file
    outside them, where it would silently join no tier, and no test module imports another (shared
    helpers live in tests/support/)."""
    tests = ROOT / "tests"
    stray = sorted(p.relative_to(ROOT).as_posix() for p in tests.rglob("test_*.py")
                   if p.parent.name not in ("unit", "gui", "integration"))
    assert stray == []
    reaching = []
    for p in sorted(tests.rglob("*.py")):
        for node in ast.walk(ast.parse(p.read_text())):
            names = [node.module or ""] if isinstance(node, ast.ImportFrom) else \
                [a.name for a in node.names] if isinstance(node, ast.Import) else []
            names += [f"{node.module}.{a.name}" for a in node.names] if isinstance(node, ast.ImportFrom) else []
            if any(part.startswith("test_") for n in names for part in n.split(".")):
                reaching.append(f"{p.relative_to(ROOT).as_posix()}:{node.lineno}")
    assert reaching == []


def _autouse_fixtures(path: Path) -> set[str]:
    """The names of `path`'s `@pytest.fixture(..., autouse=True)` functions."""
    found = set()
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.FunctionDef):
            for d in node.decorator_list:
                if isinstance(d, ast.Call) and any(k.arg == "autouse" and getattr(k.value, "value", False)
                                                   for k in d.keywords):
                    found.add(node.name)
    return found


def test_a_support_modules_autouse_fixtures_reach_every_test_module_that_uses_it():
    """pytest applies an autouse fixture only where its name is in the test module's namespace: a test
    module that takes names from tests/support/X.py but not X's autouse fixtures silently runs without
    them (a private cache that is not private lets an earlier test's cached result pass a test)."""
    support = {p.stem: _autouse_fixtures(p) for p in (ROOT / "tests" / "support").glob("*.py")}
    missing = []
    for p in sorted((ROOT / "tests").rglob("test_*.py")):
        for node in ast.parse(p.read_text()).body:
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("tests.support."):
                need = support.get(node.module.rsplit(".", 1)[1], set())
                got = {a.asname or a.name for a in node.names}
                missing += [f"{p.relative_to(ROOT).as_posix()}: {n}" for n in sorted(need - got)]
    assert sum(map(len, support.values())) >= 5  # the check sees the fixtures it guards
    assert missing == []


# Issue 32 step 1: the run's Setup is resolved at each front end's edge, so a target string is parsed
# in a few places only (which modules build and time kernels: tests/unit/test_kernels_stage.py).
def calls(path: Path, names: set[str]) -> list[str]:
    """The calls in `path` to any of `names` (a bare function or a method), as `name:line`."""
    found = []
    for node in _nodes(ast.parse(path.read_text())):
        if isinstance(node, ast.Call):
            f = node.func
            name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else None
            if name in names:
                found.append(f"{name}:{node.lineno}")
    return found


def test_a_target_is_parsed_in_three_places_at_most():
    mods = {**modules("engine"), **modules("gui")}
    found = {m: c for m, p in mods.items() if (c := calls(p, {"as_target"}))}
    assert 1 <= sum(map(len, found.values())) <= 3, found


def test_the_call_check_finds_calls_and_not_words(tmp_path):
    src = tmp_path / "probe.py"
    src.write_text('"""as_target(t) in a docstring"""\n# as_target(t) in a comment\n'
                   "x = as_target(t)\ny = targets.as_target(t)\nz = as_target\n")
    assert sorted(calls(src, {"as_target"})) == ["as_target:3", "as_target:4"]
