"""memrun's import structure (docs/architecture.md): no import circle, no layer importing a
higher one, and the lazy-import rule (:mod:`memrun.lazy`) in the modules that follow it.

Imports are read from the source (top-level, function-local and ``lazy("...")`` alike), so
an import deferred for start-up time still counts as an edge of the graph.
"""

from __future__ import annotations

import ast
from pathlib import Path

import memrun

PACKAGE = Path(memrun.__file__).resolve().parent

# Bottom to top: a module may import its own layer and the ones below, never one above.
# A module belongs to the layer of the longest prefix that names it ("memrun" alone: only
# the package itself, so a new module must be placed here).
LAYERS: list[tuple[str, tuple[str, ...]]] = [
    ("base", ("memrun", "memrun.errors", "memrun.lazy", "memrun.records", "memrun.core", "memrun.stats",
              "memrun.pipeline.progress_lines")),
    ("domain", ("memrun.config", "memrun.metrics", "memrun.judges", "memrun.llm", "memrun.io", "memrun.benchmarks",
                "memrun.arms", "memrun.accuracy", "memrun.jobs.shards", "memrun.pipeline.spec",
                "memrun.pipeline.one_history", "memrun.pipeline.many_histories", "memrun.pipeline.checks",
                "memrun.pipeline.resume")),
    ("render", ("memrun.report",)),
    ("orchestration", ("memrun.pipeline", "memrun.jobs", "memrun.comparison", "memrun.gallery")),
    ("commands", ("memrun.commands", "memrun.report.html", "memrun.view")),
    ("cli", ("memrun.cli", "memrun.__main__")),
]

# The only modules that see Hydra's config object (docs/architecture.md, "The run specification"):
# the command line, the launch of one job, the config package and plugin construction.
OMEGACONF_IMPORTERS = ("memrun.cli", "memrun.commands.show_config", "memrun.jobs.launch", "memrun.config", "memrun.core.plugins")
# memrun.core.yaml_text writes plain trees as OmegaConf does (its YAML dumper, loaded lazily);
# it never sees the config object.
OMEGACONF_DUMPER = ("memrun.core.yaml_text",)


def _modules() -> dict[str, Path]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        rel = path.relative_to(PACKAGE.parent).with_suffix("")
        parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
        found[".".join(parts)] = path
    return found


MODULES = _modules()


def _resolve(name: str) -> str | None:
    """The memrun module an imported name lives in (``memrun.x.y.Z`` -> ``memrun.x.y``)."""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def _imports(module: str) -> list[tuple[str, int, bool]]:
    """(imported memrun module, line, inside a function) for each import in ``module``."""
    path = MODULES[module]
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    in_function: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            in_function.update(id(n) for n in ast.walk(node) if n is not node)
    out = []
    for node in ast.walk(tree):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parts, base] if base else parts)
            names = [f"{base}.{a.name}" for a in node.names]
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "lazy"
              and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
            names = [node.args[0].value]
        for name in names:
            target = _resolve(name) if name.startswith("memrun") else None
            if target and target != module:
                out.append((target, node.lineno, id(node) in in_function))
    return out


# The package itself holds only the public surface (memrun/__init__.py): every name it exports
# loads at first use (PEP 562) and its imports are for type checkers only, so they are no edge
# of the graph; tests/test_public_api.py checks that importing it loads no submodule.
SURFACE = "memrun"


def _graph() -> dict[str, set[str]]:
    return {m: {t for t, _, _ in _imports(m)} if m != SURFACE else set() for m in MODULES}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    groups: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return groups


def layer_of(module: str) -> int:
    """The index in :data:`LAYERS` of ``module``'s layer (longest matching prefix)."""
    best, rank = -1, -1
    for i, (_, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            inside = module.startswith(prefix + ".") and prefix != "memrun"
            if (module == prefix or inside) and len(prefix) > best:
                best, rank = len(prefix), i
    assert rank >= 0, f"{module} is in no layer of tests/test_layers.py: add it (and to docs/architecture.md)"
    return rank


def test_no_import_circle():
    assert _cycles(_graph()) == []


def test_no_layer_imports_a_higher_one():
    upward = []
    for module in sorted(set(MODULES) - {SURFACE}):
        for target, line, _ in _imports(module):
            if layer_of(target) > layer_of(module):
                upward.append(f"{module}:{line} ({LAYERS[layer_of(module)][0]}) imports {target} "
                              f"({LAYERS[layer_of(target)][0]})")
    assert upward == []


def test_the_lazy_rule_holds_no_import_inside_a_function():
    inside = []
    for module in sorted(MODULES):
        tree = ast.parse(MODULES[module].read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                inside += [f"{module}:{n.lineno}" for n in ast.walk(node) if isinstance(n, (ast.Import, ast.ImportFrom))]
    assert inside == []


def _typed_lazy_misses(source: str) -> list[str]:
    """The ``name = lazy("mod")`` bindings of ``source`` that a type checker cannot see through:
    each must sit in the ``else`` of an ``if TYPE_CHECKING:`` whose body imports ``mod`` as
    ``name`` (:mod:`memrun.lazy`), so annotations and calls through it are checked."""
    misses, typed = [], set()
    tree = ast.parse(source)
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            imported = set()
            for stmt in node.body:
                if isinstance(stmt, ast.Import):
                    imported |= {(a.asname or a.name, a.name) for a in stmt.names}
                elif isinstance(stmt, ast.ImportFrom) and stmt.module:
                    imported |= {(a.asname or a.name, f"{stmt.module}.{a.name}") for a in stmt.names}
            typed |= {(id(stmt), name) for stmt in node.orelse for name in imported}
    for node in ast.walk(tree):
        if (isinstance(node, ast.Assign) and isinstance(node.value, ast.Call) and isinstance(node.value.func, ast.Name)
                and node.value.func.id == "lazy"):
            target = node.targets[0]
            module = node.value.args[0].value if node.value.args and isinstance(node.value.args[0], ast.Constant) else None
            if not isinstance(target, ast.Name) or (id(node), (target.id, module)) not in typed:
                misses.append(f"{getattr(target, 'id', '?')} = lazy({module!r}) at line {node.lineno}")
    return misses


def test_every_lazy_binding_is_typed():
    untyped = [f"{m}: {miss}" for m in sorted(MODULES) if m != "memrun.lazy"
               for miss in _typed_lazy_misses(MODULES[m].read_text(encoding="utf-8"))]
    assert untyped == []


def test_the_typed_lazy_check_sees_an_untyped_binding():
    typed = 'if TYPE_CHECKING:\n    import pyarrow as pa\nelse:\n    pa = lazy("pyarrow")\n'
    assert _typed_lazy_misses(typed) == []
    assert _typed_lazy_misses('pa = lazy("pyarrow")\n') == ["pa = lazy('pyarrow') at line 1"]
    wrong = 'if TYPE_CHECKING:\n    import numpy as pa\nelse:\n    pa = lazy("pyarrow")\n'
    assert _typed_lazy_misses(wrong) == ["pa = lazy('pyarrow') at line 4"]


def _imports_package(module: str, package: str) -> list[int]:
    """Lines of ``module`` that import ``package`` or a module inside it (anywhere in the file)."""
    lines = []
    for node in ast.walk(ast.parse(MODULES[module].read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and not node.level:
            names = [node.module or ""]
        else:
            continue
        lines += [node.lineno for name in names if name == package or name.startswith(package + ".")]
    return lines


def _dumper_lines(module: str) -> set[int]:
    """Lines of ``module`` that import omegaconf's YAML dumper module (``omegaconf._utils``) only."""
    return {node.lineno for node in ast.walk(ast.parse(MODULES[module].read_text(encoding="utf-8")))
            if isinstance(node, ast.ImportFrom) and node.module == "omegaconf" and [a.name for a in node.names] == ["_utils"]}


def test_only_the_cli_launch_config_and_plugin_construction_import_omegaconf():
    outside = [f"{m}:{line}" for m in sorted(MODULES) for line in _imports_package(m, "omegaconf")
               if not any(m == p or m.startswith(p + ".") for p in OMEGACONF_IMPORTERS)
               and not (m in OMEGACONF_DUMPER and line in _dumper_lines(m))]
    assert outside == []


def test_the_checks_see_a_circle_and_an_upward_import():
    # The checks themselves: a made-up graph with a circle, and the layer order.
    assert _cycles({"a": {"b"}, "b": {"a"}, "c": {"a"}}) == [["a", "b"]]
    assert layer_of("memrun.cli") > layer_of("memrun.pipeline.run") > layer_of("memrun.report.run_summary") > layer_of("memrun.arms.bm25")
    assert layer_of("memrun.report.html.sweep_page") == layer_of("memrun.commands.sweep")
