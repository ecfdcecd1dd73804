"""Every public function of the library's reference modules has a numpydoc docstring a reader can use.

The API reference page (``book/api.md``) renders these docstrings with Sphinx autodoc + napoleon, so
this test holds them to the form that page needs (issue 13):

- a one-line summary, then a blank line;
- ``Explained in :ref:`<label>` > <section heading>.``: the label exists in a chapter (or
  ``:doc:`/book/<page>``` for a back-matter page that exists) and the heading exists in that page,
  so the sentence cannot point at a section that was renamed or removed;
- a ``Parameters`` section (when the function takes parameters) that documents exactly the
  parameters of the signature, each ``name : type``;
- a ``Returns`` section;
- units in square brackets (``[s]``, ``[B/s]``, ``[FLOP]``, ``[-]`` for a dimensionless number)
  in the description of every parameter and return value whose type is a number (``int``,
  ``float``, ``complex`` or an array of them);
- a ``Raises`` section when the function takes parameters: bad input raises ``ValueError``
  (``widgets/_check.py``, ``tests/test_fuzz.py``); a function that accepts anything says
  "Never raises" instead, and one that raises something else names it.

The checker is tested on deliberately bad local functions, so it can fail.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import json
import pkgutil
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

# The modules the API reference documents: every topic module of widgets.models, the catalog, the
# units, and the dtype registry once it exists.
MODULES = sorted(
    f"widgets.models.{m.name}"
    for m in pkgutil.iter_modules([str(ROOT / "widgets" / "models")])
    if not m.name.startswith("_")
) + ["widgets.hardware", "widgets.units"]
if (ROOT / "widgets" / "dtypes.py").exists():
    MODULES.append("widgets.dtypes")

SECTION_RE = re.compile(r"^(?P<title>[A-Z][A-Za-z ]+)\n-{3,}\s*$", re.M)
# "Explained in :ref:`label` > Heading." ends its paragraph (it may wrap over lines)
EXPLAINED_RE = re.compile(r"Explained in\s+:(?P<role>ref|doc):`(?P<target>[^`]+)`\s+>\s+(?P<heading>.+?)\.?\s*(?:\n\s*\n|\Z)",
                          re.S)
NUMERIC_RE = re.compile(r"\b(int|float|complex|number)s?\b")
UNIT_RE = re.compile(r"\[[^\]\s][^\]]*\]")


def _markdown_texts(path: Path) -> list[str]:
    if path.suffix == ".ipynb":
        nb = json.loads(path.read_text(encoding="utf-8"))
        return ["".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown"]
    return [path.read_text(encoding="utf-8")]


def _headings(texts: list[str]) -> set[str]:
    found = set()
    for text in texts:
        for line in text.splitlines():
            m = re.match(r"#{1,6}\s+(.*\S)\s*$", line)
            if m:
                found.add(m.group(1))
    return found


def _pages() -> tuple[dict, dict]:
    """``{label: headings}`` for every ``(label)=`` target and ``{'/book/page': headings}`` for the pages."""
    labels, docs = {}, {}
    for path in sorted((ROOT / "chapters").glob("*.ipynb")) + sorted((ROOT / "book").rglob("*.md")) + sorted(
            (ROOT / "book").rglob("*.ipynb")):
        if "_build" in path.parts or ".ipynb_checkpoints" in path.parts:
            continue
        texts = _markdown_texts(path)
        heads = _headings(texts)
        docs["/" + str(path.relative_to(ROOT).with_suffix(""))] = heads
        for text in texts:
            for m in re.finditer(r"^\(([\w.-]+)\)=\s*$", text, re.M):
                labels[m.group(1)] = heads
    return labels, docs


LABELS, DOCS = _pages()


def _sections(doc: str) -> dict[str, str]:
    """numpydoc sections of a (dedented) docstring: ``{"Parameters": body, ...}``; ``""`` holds the text before."""
    parts, last, name = {}, 0, ""
    for m in SECTION_RE.finditer(doc):
        parts[name] = doc[last:m.start()]
        name, last = m.group("title").strip(), m.end()
    parts[name] = doc[last:]
    return parts


def _entries(body: str) -> list[tuple[str, str]]:
    """``[(head, description)]`` of a Parameters/Returns section: heads are the unindented lines."""
    out = []
    for line in body.strip("\n").splitlines():
        if line and not line[0].isspace():
            out.append([line.strip(), ""])
        elif out:
            out[-1][1] += line.strip() + " "
    return [(h, d.strip()) for h, d in out]


def problems(func) -> list[str]:
    """What a reader of the API page would miss in ``func``'s docstring (empty when it is complete)."""
    doc = inspect.getdoc(func)
    if not doc:
        return ["no docstring"]
    found = []
    lines = doc.splitlines()
    if not lines[0].strip() or (len(lines) > 1 and lines[1].strip()):
        found.append("the summary is not one line followed by a blank line")
    sections = _sections(doc)

    m = EXPLAINED_RE.search(doc)
    if not m:
        found.append("does not name the chapter section that explains it "
                     "('Explained in :ref:`<chapter label>` > <section heading>.')")
    else:
        table = LABELS if m.group("role") == "ref" else DOCS
        heading = " ".join(m.group("heading").split())
        if m.group("target") not in table:
            found.append(f"names {m.group('role')} target {m.group('target')!r}, which does not exist")
        elif heading not in table[m.group("target")]:
            found.append(f"names section {heading!r}, which is not a heading of {m.group('target')!r} "
                         f"(headings: {sorted(table[m.group('target')])})")

    params = [p for p in inspect.signature(func).parameters.values() if p.name not in ("self", "cls")]
    names = [("*" if p.kind is p.VAR_POSITIONAL else "**" if p.kind is p.VAR_KEYWORD else "") + p.name
             for p in params]
    if params:
        if "Parameters" not in sections:
            found.append("no Parameters section")
        else:
            documented = {}
            for head, desc in _entries(sections["Parameters"]):
                if " : " not in head:
                    found.append(f"parameter entry {head!r} has no ' : type'")
                    continue
                left, kind = head.split(" : ", 1)
                for name in (n.strip() for n in left.split(",")):
                    documented[name] = (kind, desc)
            for name in names:
                if name not in documented:
                    found.append(f"parameter {name!r} is not documented")
            for name in documented:
                if name not in names:
                    found.append(f"documents {name!r}, which is not a parameter")
            for name, (kind, desc) in documented.items():
                if NUMERIC_RE.search(kind) and not UNIT_RE.search(desc):
                    found.append(f"numeric parameter {name!r} has no unit in brackets ([s], [B], [-], ...)")
        if not re.search(r"\bNever raises\b", doc) and (
                "Raises" not in sections or not re.search(r"\b\w+(Error|Exception)\b", sections["Raises"])):
            found.append("no Raises section naming ValueError (or the exception it raises; 'Never raises' if none)")
    for title in ("Parameters", "Returns", "Raises"):
        for head, _ in _entries(sections.get(title, "")):
            if head.startswith(">>>") or head.endswith("."):
                found.append(f"{title} section holds {head[:40]!r}: napoleon reads it as an entry "
                             "(examples go under an 'Examples' header, prose before the sections or under 'Notes')")
    if "Returns" not in sections and "Yields" not in sections:
        found.append("no Returns section")
    else:
        for head, desc in _entries(sections.get("Returns", sections.get("Yields", ""))):
            kind = head.split(" : ", 1)[-1]
            if NUMERIC_RE.search(kind) and not UNIT_RE.search(desc):
                found.append(f"numeric return {head!r} has no unit in brackets")
    return found


def _public_functions():
    for modname in MODULES:
        mod = importlib.import_module(modname)
        names = getattr(mod, "__all__", None) or [n for n in vars(mod) if not n.startswith("_")]
        for name in names:
            obj = getattr(mod, name)
            if inspect.isfunction(obj) and obj.__module__ == modname:
                yield pytest.param(obj, id=f"{modname}.{name}")


def _property_first_lines(modname: str) -> dict[str, str]:
    """name -> the first line of each documented public property of the module's classes."""
    mod = importlib.import_module(modname)
    out = {}
    for cname, cls in vars(mod).items():
        if cname.startswith("_") or not inspect.isclass(cls) or cls.__module__ != modname:
            continue
        for pname, prop in vars(cls).items():
            if isinstance(prop, property) and not pname.startswith("_") and prop.__doc__:
                out[f"{cname}.{pname}"] = inspect.getdoc(prop).splitlines()[0]
    return out


def _attribute_first_lines(modname: str) -> dict[str, str]:
    """name -> the first line of each documented module constant and class field (``#:`` comments or
    a string after the assignment), as autodoc finds them."""
    from sphinx.pycode import ModuleAnalyzer

    return {f"{cls + '.' if cls else ''}{name}": lines[0]
            for (cls, name), lines in ModuleAnalyzer.for_module(modname).find_attr_docs().items()
            if not name.startswith("_") and not cls.startswith("_") and lines and lines[0].strip()}


@pytest.mark.parametrize("modname", MODULES)
def test_property_and_constant_docstrings_read_well_in_napoleon(modname):
    """napoleon reads the first line "text: more" of a property's or a documented constant's
    docstring as "type: description", and the API page then shows the text as an unresolved type
    (a warning under -n). (Read per module when the test runs, not at collection: autodoc's
    analyser took a second of every worker's start, issue 13.)"""
    firsts = _property_first_lines(modname)
    try:  # autodoc's reading needs Sphinx, which the GPU machine's image lacks
        import sphinx.pycode  # noqa: F401
    except ImportError:
        pass
    else:
        firsts.update(_attribute_first_lines(modname))
    bad = {name: first for name, first in firsts.items() if ": " in first}
    assert not bad, (f"first lines holding ': ' (napoleon takes the left part as its type; "
                     f"write 'text, more' or 'text. More'): {bad}")


@pytest.mark.parametrize("func", list(_public_functions()))
def test_public_function_has_numpydoc_docstring(func):
    assert problems(func) == [], f"{func.__module__}.{func.__qualname__}: " + "; ".join(problems(func))


@pytest.mark.parametrize("modname", MODULES)
def test_every_module_has_an_api_page_in_the_book(modname):
    """The reference lists every module: an ``automodule`` of it on a ``book/api/`` page in ``_toc.yml``."""
    import yaml

    def files(entries):
        for e in entries or []:
            if "file" in e:
                yield e["file"]
            yield from files(e.get("sections"))

    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    in_toc = {f for part in toc.get("parts", []) for f in files(part.get("chapters"))}
    pages = [p for p in sorted((ROOT / "book" / "api").glob("*.md"))
             if re.search(rf"^\.\. automodule:: {re.escape(modname)}\s*$", p.read_text(), re.M)]
    assert pages, f"no book/api/*.md page documents {modname} (.. automodule:: {modname})"
    assert any(str(p.relative_to(ROOT).with_suffix("")) in in_toc for p in pages), \
        f"{modname}: its API page {[p.name for p in pages]} is not in _toc.yml"


def test_api_index_example_and_error_sentence_are_true():
    """The reference's front page runs its example and quotes a real error sentence."""
    text = (ROOT / "book" / "api" / "index.md").read_text(encoding="utf-8")
    code = re.search(r"```python\n(.*?)```", text, re.S).group(1)
    exec(compile(code, "book/api/index.md", "exec"), {})  # the example runs as printed
    m = re.search(r"`(\w+)\((.*?)\)` raises\s+`ValueError: (.*?)`", text, re.S)
    assert m, "the page no longer quotes an error sentence (update this test)"
    func = next(getattr(importlib.import_module(mod), m.group(1)) for mod in MODULES
                if hasattr(importlib.import_module(mod), m.group(1)))
    with pytest.raises(ValueError) as err:
        func(*eval(f"({m.group(2)},)"))
    assert str(err.value) == " ".join(m.group(3).split())


@pytest.fixture(scope="module")
def rst_check():
    """``check(docstring) -> docutils warnings`` of the reST napoleon makes of a numpydoc docstring
    (the book's settings), with Sphinx's roles and directives stubbed (restored afterwards)."""
    pytest.importorskip("docutils", reason="docutils is not installed (the H200 image has no Sphinx stack)")
    pytest.importorskip("sphinx.ext.napoleon", reason="sphinx is not installed: napoleon cannot render the docstrings")
    import io

    from docutils import nodes
    from docutils.core import publish_doctree
    from docutils.parsers.rst import Directive, directives, roles
    from sphinx.ext.napoleon import Config
    from sphinx.ext.napoleon.docstring import NumpyDocstring

    def role(name, rawtext, text, lineno, inliner, options=None, content=None):
        return [nodes.literal(rawtext, text)], []

    class AnyOptions(dict):
        def __contains__(self, key):
            return True

        def __getitem__(self, key):
            return directives.unchanged

    class Stub(Directive):
        has_content, optional_arguments, final_argument_whitespace = True, 10, True
        option_spec = AnyOptions()

        def run(self):
            return []

    saved_roles, saved_directives = dict(roles._roles), dict(directives._directives)
    for name in ("func", "class", "mod", "ref", "doc", "data", "obj", "meth", "attr", "term", "abbr", "exc",
                 "cite", "py:class", "py:obj", "py:func", "py:mod", "py:data"):
        roles.register_local_role(name, role)
    for name in ("attribute", "method", "function", "data"):
        directives.register_directive(name, Stub)
    config = Config(napoleon_numpy_docstring=True, napoleon_google_docstring=False, napoleon_use_rtype=False,
                    napoleon_preprocess_types=True)

    def check(doc: str, what: str = "function") -> str:
        rst = str(NumpyDocstring(inspect.cleandoc(doc), config, what=what))
        err = io.StringIO()
        publish_doctree(rst, settings_overrides={"warning_stream": err, "report_level": 2, "halt_level": 5})
        return err.getvalue().strip()

    yield check
    roles._roles.clear()
    roles._roles.update(saved_roles)
    directives._directives.clear()
    directives._directives.update(saved_directives)


@pytest.mark.parametrize("func", list(_public_functions()))
def test_docstring_is_valid_rest(func, rst_check):
    """What the API page renders parses without a reST warning (an unclosed ``literal``, a field
    list broken by unindented text, ...), so the -W book build does not fail on it."""
    assert rst_check(inspect.getdoc(func)) == ""


def test_rest_check_can_fail(rst_check):
    assert "Inline literal start-string without end-string" in rst_check(
        "Half.\n\nReturns\n-------\nint\n    Atoms ``count.\n")
    assert rst_check(_good.__doc__) == ""


def test_there_are_functions_to_check():
    assert len(list(_public_functions())) > 100
    for chapter in ("memory_hierarchy", "simt", "tensor_cores", "collectives", "serving"):
        assert chapter in LABELS and len(LABELS[chapter]) > 5, chapter  # labels found, with their headings


# --- the checker itself can fail -------------------------------------------------------------------

def _good(size_bytes: float, n: int, op: str = "all_reduce") -> float:
    """Time of a collective.

    Explained in :ref:`collectives` > The alpha-beta model: ring against tree.

    Parameters
    ----------
    size_bytes : float
        Message size [B].
    n : int
        Ranks [-].
    op : str, optional
        The collective.

    Returns
    -------
    float
        Time [s].

    Raises
    ------
    ValueError
        If an input is out of range.
    """
    return size_bytes / n


def _no_doc(x):
    return x


def _one_liner(x: float) -> float:
    """Twice x."""
    return 2 * x


def _no_units(size_bytes: float) -> float:
    """Half of it.

    Explained in :ref:`collectives` > The alpha-beta model: ring against tree.

    Parameters
    ----------
    size_bytes : float
        Message size.

    Returns
    -------
    float
        Half.

    Raises
    ------
    ValueError
        If negative.
    """
    return size_bytes / 2


def _stale(size_bytes: float, n: int) -> float:
    """Renamed a parameter, forgot the docstring; points at a section that does not exist.

    Explained in :ref:`collectives` > The ring that is not there.

    Parameters
    ----------
    nbytes : float
        Message size [B].

    Returns
    -------
    float
        Time [s].

    Raises
    ------
    ValueError
        If negative.
    """
    return size_bytes / n


def _bad_label() -> float:
    """The answer.
    Summary runs on; names a label that does not exist.

    Explained in :ref:`no_such_chapter` > Summary.

    Returns
    -------
    float
        The answer [-].
    """
    return 42.0


def _raises_nothing_named(size_bytes: float) -> float:
    """Half of it.

    Explained in :ref:`collectives` > The alpha-beta model: ring against tree.

    Parameters
    ----------
    size_bytes : float
        Message size [B].

    Returns
    -------
    float
        Half [B].

    Raises
    ------
    If negative.
    """
    return size_bytes / 2


def _doctest_in_returns(size_bytes: float) -> float:
    """Half of it.

    Explained in :ref:`collectives` > The alpha-beta model: ring against tree.

    Parameters
    ----------
    size_bytes : float
        Message size [B].

    Returns
    -------
    float
        Half [B].

    >>> _doctest_in_returns(2.0)
    1.0

    Never raises.
    """
    return size_bytes / 2


def test_checker_accepts_a_complete_docstring():
    assert problems(_good) == []


@pytest.mark.parametrize("func, expected", [
    (_no_doc, ["no docstring"]),
    (_one_liner, ["does not name the chapter section", "no Parameters section", "no Raises section",
                  "no Returns section"]),
    (_no_units, ["numeric parameter 'size_bytes' has no unit", "numeric return 'float' has no unit"]),
    (_stale, ["'The ring that is not there', which is not a heading", "parameter 'size_bytes' is not documented",
              "parameter 'n' is not documented", "documents 'nbytes', which is not a parameter"]),
    (_bad_label, ["summary is not one line", "'no_such_chapter', which does not exist"]),
    (_raises_nothing_named, ["no Raises section naming ValueError", "Raises section holds 'If negative.'"]),
    (_doctest_in_returns, ["Returns section holds '>>> _doctest", "Returns section holds 'Never raises.'"]),
], ids=["no-doc", "one-liner", "no-units", "stale", "bad-label", "raises-nothing-named", "doctest-in-returns"])
def test_checker_finds_what_is_missing(func, expected):
    found = problems(func)
    for phrase in expected:
        assert any(phrase in p for p in found), (phrase, found)
    assert len(found) == len(expected), found
