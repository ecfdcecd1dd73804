"""The package's layering, read from the source (``ast``), so that a new module cannot quietly break it.

1. Imports point one way: ``_check -> units -> dtypes -> hardware -> models -> ui / experiments``. A module of
   that chain imports widgets modules of its own layer or below, or *leaf* modules (widgets modules that import
   nothing from widgets, such as ``widgets.accuracy``'s ``Row``), never one above; only the top layer (ui,
   experiments) may use the helpers outside the chain (``widgets.book``...). Every import counts, one inside a
   function too. Experiments never import ui: the GPU machine that runs them has no plotly or ipywidgets.
2. The pure layers import no heavy library: ``widgets.models`` imports neither torch, ipywidgets, plotly nor
   matplotlib, anywhere; ``_check``, ``units``, ``dtypes`` and ``hardware`` import none at module level (torch only
   inside the functions that describe the local device); experiments import no plotly/ipywidgets at module level.
3. The ui layer holds no formula of its own: it uses numpy and ``math`` only to build arrays and axes and to
   compare (``ALLOWED_NUMPY``, ``ALLOWED_MATH``), and defines no function under the name of a public function of
   the models, the catalog, the dtype registry or the units (a formula re-implemented beside its model).
4. The chapters show the library's real code: every ``{literalinclude}`` with ``:pyobject:`` names a file that
   exists and a function or class (``Class.method``) defined in it (a model moved or renamed breaks it here,
   before the book build).

Each rule is also run on small fake sources that break it, so that the checks can fail.
"""

from __future__ import annotations

import ast
import functools
import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PKG = ROOT / "widgets"

# The chain, lowest first. A module's layer is that of its longest matching prefix; modules outside
# the chain (book, doctor, measure, quiz...) sit on top of it and are not constrained here.
LAYERS = {
    "widgets._check": 0,
    "widgets.units": 1,
    "widgets.dtypes": 2,
    "widgets.hardware": 3,
    "widgets.models": 4,
    "widgets.ui": 5,
    "widgets.experiments": 5,
}
HEAVY = {"torch", "ipywidgets", "plotly", "matplotlib", "IPython", "triton", "cupy", "numba", "jax"}
DISPLAY = {"ipywidgets", "plotly", "matplotlib", "IPython"}

# numpy in ui: building arrays (for traces and sliders) and axes, dtypes for isinstance, comparisons,
# a seeded generator for exercises. Anything else (sqrt, log2, exp, sum, mean, maximum, ceil...) is
# arithmetic that belongs in a model.
ALLOWED_NUMPY = {
    "array", "asarray", "arange", "linspace", "logspace", "geomspace", "full", "zeros", "ones", "concatenate", "unique",
    "round", "log10",  # slider values and log-axis ranges (plotly's log axes take log10 coordinates)
    "ndarray", "integer", "floating", "uint8", "int64", "float64", "bool_", "nan", "inf",
    "isfinite", "isinf", "isnan", "isclose",
    "random",
}
ALLOWED_MATH = {"isfinite", "isinf", "isnan", "log10"}
# Known exceptions, each with its reason: running totals of a model's outputs, to draw a staircase
# or place path edges on an axis. No model formula is repeated; a new use anywhere else fails.
EXEMPT_NUMPY = {
    ("widgets.ui.collectives", "cumsum"): "gradient bytes all-reduced so far, summed over dp_timeline's buckets, for the staircase",
    ("widgets.ui.simt", "cumsum"): "where each divergent path starts on the time axis (the lane-activity picture)",
    ("widgets.ui._core", "floor"): "plot geometry: whole decades of a log axis and the slider grid's steps",
    ("widgets.ui._core", "log"): "plot geometry: the decades a log axis spans, and a log slider's grid",
    ("widgets.ui._core", "inf"): "plot geometry: the empty range an axis starts from",
}


# -- reading the source --------------------------------------------------------------------------
def _modname(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


MODULES = {_modname(p): p for p in sorted(PKG.rglob("*.py"))}


def _is_package(name: str) -> bool:
    return MODULES.get(name, Path()).name == "__init__.py"


def widgets_imports(name: str, source: str, *, modules=MODULES) -> set[str]:
    """The widgets modules ``name`` imports (relative imports resolved; submodules named in a
    ``from x import y`` included), anywhere in the module."""
    pkg = name.split(".") if _is_package(name) else name.split(".")[:-1]
    out = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names if a.name.split(".")[0] == "widgets"}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = ".".join(pkg[: len(pkg) - (node.level - 1)])
                mod = f"{base}.{node.module}" if node.module else base
            else:
                mod = node.module or ""
            if mod.split(".")[0] != "widgets":
                continue
            if node.module is not None or mod not in ("widgets",):
                out.add(mod)
            out |= {f"{mod}.{a.name}" for a in node.names if f"{mod}.{a.name}" in modules}
    out.discard(name)
    out.discard("widgets")  # the package's __init__ only sets the version
    return out


def external_imports(source: str, *, module_level_only: bool) -> set[str]:
    """Top-level names of the non-widgets libraries imported (optionally outside function bodies only)."""
    out = set()

    def visit(node):
        for child in ast.iter_child_nodes(node):
            if module_level_only and isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                continue
            if isinstance(child, ast.Import):
                out.update(a.name.split(".")[0] for a in child.names)
            elif isinstance(child, ast.ImportFrom) and not child.level and child.module:
                out.add(child.module.split(".")[0])
            visit(child)

    visit(ast.parse(source))
    return out - {"widgets"}


def layer(name: str):
    best = None
    for prefix, k in LAYERS.items():
        if (name == prefix or name.startswith(prefix + ".")) and (best is None or len(prefix) > len(best[0])):
            best = (prefix, k)
    return None if best is None else best[1]


@functools.cache
def _leaves() -> frozenset:
    modules = MODULES
    return frozenset(m for m, p in modules.items() if not widgets_imports(m, p.read_text(encoding="utf-8"), modules=modules))


def upward_imports(name: str, source: str, leaves: set[str]) -> list[str]:
    """The imports of ``name`` that break the chain (a higher layer, or a non-leaf module outside it)."""
    k = layer(name)
    if k is None:
        return []
    bad = []
    for imp in sorted(widgets_imports(name, source)):
        kk = layer(imp)
        if imp in leaves:
            continue
        if kk is None and k < max(LAYERS.values()):  # book, doctor...: only the top layer may use them
            bad.append(imp)
        elif kk is not None and kk > k:
            bad.append(imp)
        elif name.startswith("widgets.experiments") and imp.startswith("widgets.ui"):
            bad.append(imp)
    return bad


def numpy_and_math_uses(source: str) -> set[tuple[str, str]]:
    """``("numpy"|"math", attribute)`` for every ``np.x`` / ``math.x`` (first attribute) and every
    ``from numpy import x``."""
    tree = ast.parse(source)
    aliases = {}
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name in ("numpy", "math"):
                    aliases[a.asname or a.name] = a.name
        elif isinstance(node, ast.ImportFrom) and node.module in ("numpy", "math"):
            out |= {(node.module, a.name) for a in node.names}
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in aliases:
            out.add((aliases[node.value.id], node.attr))
    return out


def formula_violations(name: str, source: str, model_functions: set[str]) -> list[str]:
    bad = []
    for lib, attr in sorted(numpy_and_math_uses(source)):
        allowed = ALLOWED_NUMPY if lib == "numpy" else ALLOWED_MATH
        if attr not in allowed and (name, attr) not in EXEMPT_NUMPY:
            bad.append(f"{lib}.{attr}")
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name in model_functions:
            bad.append(f"def {node.name} (a public function of the models has that name)")
    return bad


@functools.cache
def _model_functions() -> frozenset:
    names = set()
    for m, p in MODULES.items():
        if layer(m) is not None and layer(m) <= LAYERS["widgets.models"]:
            names |= {n.name for n in ast.parse(p.read_text(encoding="utf-8")).body
                      if isinstance(n, ast.FunctionDef) and not n.name.startswith("_")}
    return frozenset(names)


# -- the rules on the real package ---------------------------------------------------------------
def test_the_chain_covers_the_package():
    assert {"widgets.dtypes", "widgets.hardware", "widgets.models.serving", "widgets.models.transformer",
            "widgets.models.llms", "widgets.ui.serving", "widgets.experiments.serving"} <= set(MODULES)
    assert layer("widgets.models._check") == 4 and layer("widgets.book") is None


@pytest.mark.parametrize("name", [m for m in MODULES if layer(m) is not None])
def test_imports_point_one_way(name):
    leaves = _leaves()
    assert not upward_imports(name, MODULES[name].read_text(encoding="utf-8"), leaves), (
        f"{name} (layer {layer(name)}) imports above its layer: {upward_imports(name, MODULES[name].read_text(encoding='utf-8'), leaves)}")


@pytest.mark.parametrize("name", [m for m in MODULES if layer(m) is not None and layer(m) <= LAYERS["widgets.models"]])
def test_pure_layers_import_no_heavy_library(name):
    source = MODULES[name].read_text(encoding="utf-8")
    anywhere = name.startswith("widgets.models")
    found = external_imports(source, module_level_only=not anywhere) & HEAVY
    assert not found, f"{name} imports {sorted(found)}{'' if anywhere else ' at module level'}"


@pytest.mark.parametrize("name", [m for m in MODULES if m.startswith("widgets.experiments")])
def test_experiments_import_no_display_library_at_module_level(name):
    found = external_imports(MODULES[name].read_text(encoding="utf-8"), module_level_only=True) & DISPLAY
    assert not found, f"{name} imports {sorted(found)} at module level (the GPU machine has none)"


@pytest.mark.parametrize("name", [m for m in MODULES if m.startswith("widgets.ui.")])
def test_ui_holds_no_formula(name):
    bad = formula_violations(name, MODULES[name].read_text(encoding="utf-8"), _model_functions())
    assert not bad, f"{name}: {bad}: move the arithmetic into the topic's model (with a test)"


def test_exemptions_are_still_needed():
    for (name, attr), reason in EXEMPT_NUMPY.items():
        uses = numpy_and_math_uses(MODULES[name].read_text(encoding="utf-8"))
        assert ("numpy", attr) in uses or ("math", attr) in uses, (name, attr, reason)


# -- the checks can fail ------------------------------------------------------------------------
def test_checks_catch_fake_violations():
    leaves = {"widgets.accuracy"}
    assert upward_imports("widgets.models.fake", "from ..ui import serving\n", leaves) == ["widgets.ui", "widgets.ui.serving"]
    assert upward_imports("widgets.models.fake", "def f():\n    from ..experiments import harness\n", leaves) == [
        "widgets.experiments", "widgets.experiments.harness"]
    assert upward_imports("widgets.dtypes", "from .hardware import get_gpu\n", leaves) == ["widgets.hardware"]
    assert upward_imports("widgets.hardware", "from . import book\n", leaves) == ["widgets.book"]
    assert upward_imports("widgets.ui.fake", "from .. import book\n", leaves) == []  # the top layer may
    assert upward_imports("widgets.experiments.fake", "from ..ui import _core\n", leaves) == ["widgets.ui", "widgets.ui._core"]
    assert upward_imports("widgets.models.fake", "from ..accuracy import Row\nfrom .. import dtypes\n", leaves) == []
    assert external_imports("def f():\n    import torch\n", module_level_only=True) == set()
    assert external_imports("def f():\n    import torch\n", module_level_only=False) == {"torch"}
    assert external_imports("import plotly.graph_objects as go\n", module_level_only=True) == {"plotly"}
    fake_ui = ("import numpy as np\nimport math\n"
               "def kv_cache_bytes(a):\n    return np.sqrt(a) + math.exp(a) + np.array([a]).sum()\n")
    bad = formula_violations("widgets.ui.fake", fake_ui, {"kv_cache_bytes"})
    assert set(bad) == {"numpy.sqrt", "math.exp", "def kv_cache_bytes (a public function of the models has that name)"}
    assert formula_violations("widgets.ui.fake", "from numpy import cumsum\n", set()) == ["numpy.cumsum"]
    assert formula_violations("widgets.ui.fake", "import numpy as np\nx = np.logspace(0, np.log10(8), 4)\n", set()) == []


# -- teaching code points at the real function ----------------------------------------------------
LITERALINCLUDE_RE = re.compile(r"```\{literalinclude\}\s+(?P<path>\S+)\s*\n(?P<opts>(?::[\w-]+:.*\n)*)")


def _markdown_sources():
    for path in sorted((ROOT / "chapters").glob("*.ipynb")) + sorted((ROOT / "book").rglob("*.ipynb")) + sorted(
            (ROOT / "book").rglob("*.md")):
        if "_build" in path.parts or ".ipynb_checkpoints" in path.parts:
            continue
        if path.suffix == ".ipynb":
            cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
            yield path, ["".join(c["source"]) for c in cells if c["cell_type"] == "markdown"]
        else:
            yield path, [path.read_text(encoding="utf-8")]


def defined_objects(source: str) -> set[str]:
    """``name`` of every top-level function/class and ``Class.name`` of every method."""
    out = set()
    for node in ast.parse(source).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.add(node.name)
        if isinstance(node, ast.ClassDef):
            out |= {f"{node.name}.{n.name}" for n in node.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
    return out


def literalinclude_problems(page: Path, text: str) -> list[str]:
    bad = []
    for m in LITERALINCLUDE_RE.finditer(text + "\n"):
        opts = dict(re.findall(r"^:([\w-]+):\s*(.*?)\s*$", m.group("opts"), re.M))
        if "pyobject" not in opts:
            continue
        target = (page.parent / m.group("path")).resolve()
        if not target.is_file():
            bad.append(f"{m.group('path')} does not exist")
        elif opts["pyobject"] not in defined_objects(target.read_text(encoding="utf-8")):
            bad.append(f"{m.group('path')} defines no {opts['pyobject']}")
    return bad


def test_literalincludes_name_real_functions():
    found, bad = 0, []
    for page, texts in _markdown_sources():
        for text in texts:
            found += len(LITERALINCLUDE_RE.findall(text + "\n"))
            bad += [f"{page.relative_to(ROOT)}: {b}" for b in literalinclude_problems(page, text)]
    # the chapters show their models with book.show_source now (tests/test_notebooks.py counts those listings and
    # checks they name real code); this checks any {literalinclude} left in book/ pages
    assert not bad, bad


def test_literalinclude_check_can_fail(tmp_path):
    (tmp_path / "m.py").write_text("def f():\n    pass\n\n\nclass C:\n    def g(self):\n        pass\n")
    page = tmp_path / "page.md"
    ok = "```{literalinclude} m.py\n:pyobject: C.g\n:language: python\n```\n"
    assert literalinclude_problems(page, ok) == []
    assert literalinclude_problems(page, ok.replace("C.g", "kv_cache_bytes_per_token")) == ["m.py defines no kv_cache_bytes_per_token"]
    assert literalinclude_problems(page, ok.replace("m.py", "serving.py")) == ["serving.py does not exist"]

