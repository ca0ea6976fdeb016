"""tritium's Python modules import one way: no import cycle, and no module
imports a layer above its own (errors <- language <- runtime <- compiler <-
the front door: jit, compile_api, autotuner <- the package root).

The module graph is read from the sources with `ast`, imports inside
functions included: an import moved into a function to dodge a cycle is
still a cycle. No module is imported (nor _C needed) to build it."""

import ast
import os
import textwrap

import pytest

PKG_DIR = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "tritium"))

# Extension modules built into the package (no .py file, may not be built yet).
NATIVE = {"tritium._C"}


def _modules(pkg_dir, pkg_name):
    """{module name: (path, is_package)} of every .py file under pkg_dir."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(pkg_dir):
        dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
        rel = os.path.relpath(dirpath, pkg_dir)
        parts = [pkg_name] + ([] if rel == "." else rel.split(os.sep))
        for fn in sorted(filenames):
            if not fn.endswith(".py"):
                continue
            if fn == "__init__.py":
                out[".".join(parts)] = (os.path.join(dirpath, fn), True)
            else:
                out[".".join(parts + [fn[:-3]])] = (os.path.join(dirpath, fn), False)
    return out


def import_graph(pkg_dir, pkg_name, native=()):
    """{module: set of the package's modules it imports}, at module level or
    in any function or class body. `from X import name` depends on X.name
    when that is a module (or a native extension), else on X itself."""
    modules = _modules(pkg_dir, pkg_name)
    known = set(modules) | set(native)
    graph = {m: set() for m in modules}
    for mod, (path, is_package) in modules.items():
        with open(path, encoding="utf-8") as f:
            tree = ast.parse(f.read(), path)
        package = mod if is_package else mod.rpartition(".")[0]
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name == pkg_name or alias.name.startswith(pkg_name + "."):
                        graph[mod].add(alias.name)
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")
                    if node.level > 1:
                        base = base[:-(node.level - 1)]
                    base = ".".join(base + ([node.module] if node.module else []))
                else:
                    base = node.module or ""
                if base != pkg_name and not base.startswith(pkg_name + "."):
                    continue  # another package's module
                for alias in node.names:
                    sub = f"{base}.{alias.name}"
                    graph[mod].add(sub if sub in known else base)
    return graph


def find_cycle(graph):
    """A cycle [m0, m1, ..., m0] of the graph, or None."""
    state = {}  # module -> 1 while on the DFS stack, 2 when done
    for root in sorted(graph):
        if root in state:
            continue
        stack = [(root, iter(sorted(graph.get(root, ()))))]
        path = [root]
        state[root] = 1
        while stack:
            node, deps = stack[-1]
            nxt = next(deps, None)
            if nxt is None:
                state[node] = 2
                stack.pop()
                path.pop()
                continue
            if state.get(nxt) == 1:
                return path[path.index(nxt):] + [nxt]
            if nxt not in state:
                state[nxt] = 1
                path.append(nxt)
                stack.append((nxt, iter(sorted(graph.get(nxt, ())))))
    return None


# -- the detector itself -------------------------------------------------------------------------


def _package(tmp_path, files):
    root = tmp_path / "pkg"
    for name, src in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(src))
    return str(root)


def test_detector_finds_a_cycle_through_a_function_level_import(tmp_path):
    pkg = _package(tmp_path, {
        "__init__.py": "",
        "a.py": "from . import b\n",
        "b.py": "def f():\n    from .a import thing\n    return thing\n",
        "c.py": "from .a import b\n",
    })
    graph = import_graph(pkg, "pkg")
    assert graph["pkg.a"] == {"pkg.b"} and graph["pkg.b"] == {"pkg.a"}
    assert graph["pkg.c"] == {"pkg.a"}  # `b` is a name in a: c depends on a
    cycle = find_cycle(graph)
    assert cycle is not None and cycle[0] == cycle[-1] and set(cycle) == {"pkg.a", "pkg.b"}


def test_detector_finds_an_import_from_the_package_root(tmp_path):
    # The root imports x; x asks the root for a name (as `from . import
    # __version__` would): a cycle through the package's __init__.
    pkg = _package(tmp_path, {
        "__init__.py": "VERSION = '1'\nfrom .sub.x import run\n",
        "sub/__init__.py": "",
        "sub/x.py": "def run():\n    import pkg\n    from .. import VERSION\n    return VERSION\n",
    })
    graph = import_graph(pkg, "pkg")
    assert graph["pkg"] == {"pkg.sub.x"} and graph["pkg.sub.x"] == {"pkg"}
    assert set(find_cycle(graph)) == {"pkg", "pkg.sub.x"}


def test_detector_accepts_a_layered_package(tmp_path):
    pkg = _package(tmp_path, {
        "__init__.py": "from .top import f\nfrom . import low\n",
        "low.py": "import os\n",
        "mid/__init__.py": "from .m import g\n",
        "mid/m.py": "from ..low import os\ndef g():\n    import pkg.low\n    from pkg import _C\n",
        "top.py": "from .mid import m\nfrom .mid import g\ndef f():\n    from . import low\n",
    })
    graph = import_graph(pkg, "pkg", native={"pkg._C"})
    assert graph["pkg.mid.m"] == {"pkg.low", "pkg._C"}
    assert graph["pkg.top"] == {"pkg.mid.m", "pkg.mid", "pkg.low"}
    assert find_cycle(graph) is None


# -- tritium -------------------------------------------------------------------------------------

# Each module's layer: a module may import its own layer or those below.
LAYERS = [
    ("tritium.errors", "tritium.tools"),
    ("tritium.language",),
    ("tritium.runtime",),
    ("tritium.compiler",),
    ("tritium.testing",),
    ("tritium.jit", "tritium.compile_api", "tritium.autotuner", "tritium.torch_op"),
    ("tritium.inductor",),
    # The AOT tool and explain drive the whole compiler.
    ("tritium.tools.compile", "tritium.tools.explain"),
]


def _layer(module):
    if module in NATIVE:
        return -1
    # The layer of the longest prefix that names the module.
    best, best_len = None, -1
    for i, prefixes in enumerate(LAYERS):
        for p in prefixes:
            if (module == p or module.startswith(p + ".")) and len(p) > best_len:
                best, best_len = i, len(p)
    if best is not None:
        return best
    assert module == "tritium", f"{module} is in no layer: add it to LAYERS"
    return len(LAYERS)


@pytest.fixture(scope="module")
def graph():
    return import_graph(PKG_DIR, "tritium", NATIVE)


def test_the_graph_is_read(graph):
    # Module-level, relative and function-level imports are all seen.
    assert "tritium.compiler.pipeline" in graph["tritium.jit"]
    assert "tritium.runtime.launcher" in graph["tritium.compiler.codegen"]
    assert "tritium._C" in graph["tritium.errors"]  # inside load_C()
    assert "tritium.jit" in graph["tritium"]


def test_tritium_has_no_import_cycle(graph):
    cycle = find_cycle(graph)
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


def test_tritium_imports_point_down(graph):
    upward = [f"{m} ({_layer(m)}) imports {d} ({_layer(d)})"
              for m in sorted(graph) for d in sorted(graph[m]) if _layer(d) > _layer(m)]
    assert upward == []
