"""Rewrite a notebook's myst-nb ``glue`` prose numbers into the ``{eval}`prose.<key>``` form that
both the book build and JupyterLab (jupyterlab-myst) render. Idempotent: a converted notebook is
left as it is.

    .venv/bin/python tests/tools/prose_convert.py                 # every chapter and book/*.ipynb
    .venv/bin/python tests/tools/prose_convert.py chapters/simt.ipynb
    .venv/bin/python tests/tools/prose_convert.py --check         # exit 1 if anything is left to convert

What it rewrites:

- code: ``glue("key", value, display=False)`` -> ``prose.key = value``; a key that is not a string
  literal (``glue(f"n_{label}", ...)``) -> ``prose[f"n_{label}"] = value``; the ``widgets.book``
  setup helpers ``S.glue("key", value)`` -> ``prose.key = value`` and ``S.glue_all(m)`` ->
  ``prose.update(m)``; a glue call inside an expression (not a statement of its own) becomes
  ``prose.set("key", value)``. ``from myst_nb import glue`` becomes ``from widgets.prose import prose``
  (the import is added to the first code cell that imports from ``widgets`` when a notebook needs it).
- markdown: ``{glue:text}`key```, ``{glue}`key``` and ``{glue:}`key``` -> ``{eval}`prose.key```.

What it leaves, and reports (exit status 2): a glue call that displays its value (``display`` not
False), ``{glue:md}``/``{glue:figure}``/``{glue:math}`` and keys with a format spec
(``{glue:text}`key:.2f```): write those by hand (format the value in the code cell).

Each notebook is rewritten while holding its lock ``/tmp/nblock.<stem>`` (the shared tree's protocol),
loaded and dumped in one go (json, indent=1, ensure_ascii=False, trailing newline), outputs untouched.
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import sys
import time
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
IMPORT_LINE = "from widgets.prose import prose"
GLUE_IMPORT = re.compile(r"^from myst_nb import (?P<names>[^\n#]+?)[ \t]*(?P<comment>#.*)?$", re.M)
# {glue:text}`key`, {glue}`key`, {glue:}`key` (convertible); {glue:md}`key` etc. (reported)
ROLE = re.compile(r"\{glue(?::(?P<kind>[a-z]*))?\}`(?P<key>[^`]*)`")
IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
MAGIC = re.compile(r"^(\s*)([%!].*)$", re.M)


class Problem(Exception):
    pass


def _mask_magics(src: str) -> str:
    """IPython magics and shell lines -> comments of the same length (positions kept for ast)."""
    return MAGIC.sub(lambda m: m.group(1) + "#" + m.group(2)[1:], src)


def _offsets(src: str) -> list[int]:
    starts, pos = [], 0
    for line in src.splitlines(keepends=True):
        starts.append(pos)
        pos += len(line)
    starts.append(pos)
    return starts


def _span(node: ast.AST, starts: list[int]) -> tuple[int, int]:
    # ast columns are UTF-8 byte offsets: convert through each line's bytes
    def at(lineno: int, col: int) -> int:
        line_start = starts[lineno - 1]
        line_end = starts[lineno] if lineno < len(starts) else line_start
        return line_start + len(SRC[0][line_start:line_end].encode("utf-8")[:col].decode("utf-8"))

    return at(node.lineno, node.col_offset), at(node.end_lineno, node.end_col_offset)


SRC = [""]  # the cell being converted (for _span's byte -> str offset conversion)


def _glue_kind(call: ast.Call) -> str | None:
    f = call.func
    if isinstance(f, ast.Name) and f.id == "glue":
        return "glue"
    if isinstance(f, ast.Attribute) and f.attr == "glue" and not (isinstance(f.value, ast.Name) and f.value.id == "prose"):
        return "setup_glue"
    if isinstance(f, ast.Attribute) and f.attr == "glue_all":
        return "glue_all"
    return None


def _seg(src: str, node: ast.AST, starts: list[int]) -> str:
    a, b = _span(node, starts)
    return src[a:b]


def _value_text(src: str, node: ast.AST, starts: list[int], new_col: int) -> str:
    """The value's source, bracketed when it spans lines, its continuation lines shifted so that
    they keep their place relative to its first line (which moves to column ``new_col``)."""
    text = _seg(src, node, starts)
    if "\n" not in text:
        return text
    if not _bracketed(text):
        text, new_col = f"({text})", new_col + 1
    if '"""' in text or "'''" in text:  # a triple-quoted string: its lines are data, leave them
        return text
    a, _ = _span(node, starts)
    old_col = a - src.rfind("\n", 0, a) - 1
    shift = new_col - old_col
    lines = text.split("\n")
    for i in range(1, len(lines)):
        line = lines[i]
        indent = len(line) - len(line.lstrip(" "))
        lines[i] = " " * max(0, indent + shift) + line.lstrip(" ") if line.strip() else line
    return "\n".join(lines)


def _bracketed(text: str) -> bool:
    """True when ``text`` is one bracketed expression (safe to continue over lines as it is)."""
    if not text or text[0] not in "([{" or text[-1] not in ")]}":
        return False
    depth = 0
    for i, ch in enumerate(text):  # strings with brackets in them only make this answer False (then we wrap)
        depth += ch in "([{"
        depth -= ch in ")]}"
        if depth == 0 and i < len(text) - 1:
            return False
    return True


def convert_code(src: str, where: str) -> tuple[str, int, list[str]]:
    """Return (new source, number of calls rewritten, problems) for one code cell."""
    if "glue" not in src:
        return src, 0, []
    SRC[0] = src
    try:
        tree = ast.parse(_mask_magics(src))
    except SyntaxError as exc:
        return src, 0, [f"{where}: cannot parse the cell ({exc.msg}, line {exc.lineno}); convert it by hand"]
    starts = _offsets(src)
    parents = {}
    for node in ast.walk(tree):
        for child in ast.iter_child_nodes(node):
            parents[child] = node
    edits: list[tuple[int, int, str]] = []
    problems: list[str] = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and (kind := _glue_kind(node))):
            continue
        line = f"{where} line {node.lineno}"
        kw = {k.arg: k.value for k in node.keywords}
        if kind == "glue_all":
            if len(node.args) != 1 or node.keywords:
                problems.append(f"{line}: glue_all with unexpected arguments; convert it by hand")
                continue
            stmt_text = f"prose.update({_seg(src, node.args[0], starts)})"
            expr_text = stmt_text
        else:
            if len(node.args) < 2 or set(kw) - {"display"}:
                problems.append(f"{line}: glue call with unexpected arguments; convert it by hand")
                continue
            if kind == "glue":
                disp = kw.get("display")
                if len(node.args) > 2 or not (isinstance(disp, ast.Constant) and disp.value is False):
                    problems.append(f"{line}: glue(...) that displays its value (display is not False); convert it by hand")
                    continue
            key, value = node.args[0], node.args[1]
            parent = parents.get(node)
            is_stmt = isinstance(parent, ast.Expr) and parent.value is node
            start, _ = _span(parent if is_stmt else node, starts)
            col = start - src.rfind("\n", 0, start) - 1
            if isinstance(key, ast.Constant) and isinstance(key.value, str):
                if not IDENT.fullmatch(key.value):
                    problems.append(f"{line}: glue key {key.value!r} is not a Python identifier; rename it by hand")
                    continue
                head = f"prose.{key.value} = " if is_stmt else f"prose.set({json.dumps(key.value)}, "
            else:
                head = f"prose[{_seg(src, key, starts)}] = " if is_stmt else f"prose.set({_seg(src, key, starts)}, "
            vtext = _value_text(src, value, starts, col + len(head))
            stmt_text = head + vtext
            expr_text = head + vtext + ")"
        parent = parents.get(node)
        if isinstance(parent, ast.Expr) and parent.value is node:
            a, b = _span(parent, starts)
            edits.append((a, b, stmt_text))
        else:
            a, b = _span(node, starts)
            edits.append((a, b, expr_text))
    out = src
    for a, b, text in sorted(edits, reverse=True):
        out = out[:a] + text + out[b:]
    if edits:
        try:
            ast.parse(_mask_magics(out))
        except SyntaxError as exc:
            return src, 0, [f"{where}: the rewrite would not parse ({exc.msg}); convert it by hand"]
    return out, len(edits), problems


def _fix_import(m: re.Match) -> str:
    names = [n.strip() for n in m.group("names").split(",") if n.strip()]
    rest = [n for n in names if n != "glue"]
    comment = f"  {m.group('comment')}" if m.group("comment") else ""
    lines = [f"from myst_nb import {', '.join(rest)}{comment}"] if rest else []
    return "\n".join(lines + [IMPORT_LINE])


def convert_markdown(src: str, where: str) -> tuple[str, int, list[str]]:
    problems: list[str] = []
    count = 0

    def sub(m: re.Match) -> str:
        nonlocal count
        kind, key = m.group("kind"), m.group("key")
        if kind not in (None, "", "text") or not IDENT.fullmatch(key):
            problems.append(f"{where}: {m.group(0)} (a format spec or a non-text glue role); write it by hand")
            return m.group(0)
        count += 1
        return f"{{eval}}`prose.{key}`"

    out = ROLE.sub(sub, src)
    for m in re.finditer(r"[`:]\{glue:[a-z]+\}", out):
        problems.append(f"{where}: a glue directive ({m.group(0)[1:]}); write it by hand")
    return out, count, problems


def _source(cell) -> str:
    s = cell.get("source", "")
    return "".join(s) if isinstance(s, list) else s


def _set_source(cell, text: str) -> None:
    cell["source"] = text.splitlines(keepends=True)


def convert_notebook(nb: dict, name: str) -> tuple[int, list[str]]:
    """Convert ``nb`` in place; return (number of changes, problems)."""
    changes, problems = 0, []
    for i, cell in enumerate(nb["cells"]):
        src = _source(cell)
        where = f"{name} cell {i} ({cell.get('id', '?')})"
        if cell["cell_type"] == "code":
            new, n, p = convert_code(src, where)
        elif cell["cell_type"] == "markdown":
            new, n, p = convert_markdown(src, where)
        else:
            continue
        if cell["cell_type"] == "code" and not p and re.search(r"^[^#\n]*(?<![\w.])glue\(", new, re.M):
            p = [f"{where}: a glue call this tool cannot rewrite (in a magic line?); convert it by hand"]
        problems += p
        if new != src:
            _set_source(cell, new)
            changes += n
    code = [(c, _source(c)) for c in nb["cells"] if c["cell_type"] == "code"]
    glue_left = any(re.search(r"^[^#\n]*(?<![\w.])glue\(", s, re.M) for _, s in code)
    if not glue_left:  # the myst-nb import goes (replaced by the prose one) once no glue call is left
        for cell, s in code:
            new = GLUE_IMPORT.sub(_fix_import, s)
            if new != s:
                _set_source(cell, new)
                changes += 1
        code = [(c, _source(c)) for c in nb["cells"] if c["cell_type"] == "code"]
    uses = any(re.search(r"\bprose\s*[.\[]", s) for _, s in code)
    imported = any(re.search(r"^\s*from widgets\.prose import .*\bprose\b", s, re.M) for _, s in code)
    if uses and not imported:
        for cell, s in code:
            m = re.search(r"^from widgets(\.\w+)* import .*$", s, re.M) or re.search(r"^import widgets.*$", s, re.M)
            if m:
                _set_source(cell, s[: m.end()] + "\n" + IMPORT_LINE + s[m.end():])
                changes += 1
                break
        else:
            problems.append(f"{name}: uses prose but no code cell imports from widgets; add `{IMPORT_LINE}` by hand")
    moved, p = hoist_hidden_cells(nb, name)
    return changes + moved, problems + p


EVAL = re.compile(r"\{eval\}`prose\.([A-Za-z_][A-Za-z0-9_]*)`")
SETS = re.compile(r"\bprose\.([A-Za-z_][A-Za-z0-9_]*)\s*=(?!=)|\bprose\.set\(\s*[\"']([A-Za-z_][A-Za-z0-9_]*)[\"']")
HIDDEN = ("remove-cell",)


def _names(src: str) -> tuple[set[str], set[str]]:
    """(names a code cell reads, names it binds); both empty when it does not parse."""
    try:
        tree = ast.parse(_mask_magics(src))
    except SyntaxError:
        return {"<unparsed>"}, {"<unparsed>"}
    loads, stores = set(), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            (loads if isinstance(node.ctx, ast.Load) else stores).add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            stores.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            stores.update((a.asname or a.name).split(".")[0] for a in node.names)
    return loads - {"prose"}, stores - {"prose"}


def forward_references(nb: dict) -> list[tuple[int, str, int | None]]:
    """(markdown cell index, key, index of the first code cell that sets it or None) for every
    ``{eval}`prose.key``` that no code cell above it sets (dynamic ``prose[...]`` keys are not seen)."""
    first_set: dict[str, int] = {}
    for i, cell in enumerate(nb["cells"]):
        if cell["cell_type"] == "code":
            for m in SETS.finditer(_source(cell)):
                first_set.setdefault(m.group(1) or m.group(2), i)
    dynamic = any(re.search(r"\bprose\[", _source(c)) for c in nb["cells"] if c["cell_type"] == "code")
    out = []
    for i, cell in enumerate(nb["cells"]):
        if cell["cell_type"] == "markdown":
            for key in EVAL.findall(_source(cell)):
                j = first_set.get(key)
                if (j is None and not dynamic) or (j is not None and j > i):
                    out.append((i, key, j))
    return out


def hoist_hidden_cells(nb: dict, name: str) -> tuple[int, list[str]]:
    """Move a hidden code cell that sets values a markdown cell above it reads to just above that
    markdown cell, when that is safe: the cells it jumps over bind nothing it reads and touch
    nothing it binds. Return (cells moved, what could not be moved)."""
    moved, stuck = 0, set()
    for _ in range(len(nb["cells"])):
        refs = [(i, k, j) for i, k, j in forward_references(nb) if j is not None and nb["cells"][j].get("id") not in stuck]
        if not refs:
            break
        j = refs[0][2]
        targets = sorted({i for i, _, jj in refs if jj == j})
        target = targets[0]
        cell = nb["cells"][j]
        stuck.add(cell.get("id"))  # tried once; a moved or split cell is seen afresh under its new id
        if not any(t in cell.get("metadata", {}).get("tags", []) for t in HIDDEN):
            continue
        loads, stores = _names(_source(cell))
        between = [c for c in nb["cells"][target:j] if c["cell_type"] == "code"]
        b_loads, b_stores = set(), set()
        for c in between:
            lo, st = _names(_source(c))
            b_loads |= lo
            b_stores |= st
        if not (loads & b_stores or stores & (b_loads | b_stores)):
            nb["cells"].insert(target, nb["cells"].pop(j))
            stuck.discard(cell.get("id"))
            moved += 1
            continue
        part = None
        for target in targets:  # the earliest markdown first; else the later ones (fewer keys, fewer cells jumped)
            b_loads, b_stores = set(), set()
            for c in nb["cells"][target:j]:
                if c["cell_type"] == "code":
                    lo, st = _names(_source(c))
                    b_loads |= lo
                    b_stores |= st
            keys = {k for i, k, jj in refs if jj == j and i >= target}
            part = _split_off(_source(cell), keys, b_loads, b_stores)
            if part is not None:
                break
        if part is None:
            continue
        stuck.discard(cell.get("id"))  # what is left of it may still serve an earlier markdown cell
        head, rest = part
        _set_source(cell, rest)
        new = {"cell_type": "code", "execution_count": None, "id": _new_id(nb), "metadata": json.loads(json.dumps(cell["metadata"])),
               "outputs": [], "source": []}
        _set_source(new, head)
        nb["cells"].insert(target, new)
        moved += 1
    problems = [
        f"{name} cell {i}: {{eval}}`prose.{k}` is read before any code cell sets it"
        + (f" (cell {j} sets it below; move that code above the prose by hand)" if j is not None else "")
        for i, k, j in forward_references(nb)
    ]
    return moved, problems


def _new_id(nb: dict) -> str:
    import secrets

    ids = {c.get("id") for c in nb["cells"]}
    while (i := secrets.token_hex(4)) in ids:
        pass
    return i


def _split_off(src: str, keys: set[str], b_loads: set[str], b_stores: set[str]) -> tuple[str, str] | None:
    """Split a cell into (the top-level statements that set ``keys`` and those they need, the rest),
    when the first part reads nothing bound by the cells it would jump over (``b_stores``) and binds
    nothing they use; None when that is not possible."""
    try:
        tree = ast.parse(_mask_magics(src))
    except SyntaxError:
        return None
    SRC[0] = src
    starts = _offsets(src)
    stmts = tree.body
    info = []
    for st in stmts:
        seg = src[slice(*_span(st, starts))]
        info.append((st, *_names(seg), {m.group(1) or m.group(2) for m in SETS.finditer(seg)}))
    chosen = {n for n, (_, _, _, sets) in enumerate(info) if sets & keys}
    if not chosen:
        return None
    need = set().union(*(info[n][1] for n in chosen))
    for n in range(max(chosen), -1, -1):  # statements above the chosen ones that bind what they need
        if n not in chosen and info[n][2] & need:
            chosen.add(n)
            need |= info[n][1]
    loads = set().union(*(info[n][1] for n in chosen))
    stores = set().union(*(info[n][2] for n in chosen))
    if loads & b_stores or stores & (b_loads | b_stores) or len(chosen) == len(stmts):
        return None
    lines = src.splitlines(keepends=True)
    take = set()
    for n in chosen:
        st = info[n][0]
        first = st.lineno - 1
        # comment lines directly above a statement travel with it
        while first > 0 and lines[first - 1].lstrip().startswith("#"):
            first -= 1
        take.update(range(first, st.end_lineno))
    head = "".join(line for k, line in enumerate(lines) if k in take).rstrip("\n")
    rest = "".join(line for k, line in enumerate(lines) if k not in take).strip("\n")
    return head, rest


@contextmanager
def _lock(path: Path, wait_s: float = 600):
    lock = Path(f"/tmp/nblock.{path.stem}")
    t0 = time.monotonic()
    while True:
        try:
            lock.mkdir()
            break
        except FileExistsError:
            if time.monotonic() - t0 > wait_s:
                raise TimeoutError(f"{lock} held for over {wait_s:.0f} s") from None
            time.sleep(2)
    try:
        yield
    finally:
        lock.rmdir()


def default_paths() -> list[Path]:
    return sorted((ROOT / "chapters").glob("*.ipynb")) + sorted((ROOT / "book").glob("*.ipynb"))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("paths", nargs="*", type=Path)
    ap.add_argument("--check", action="store_true", help="change nothing; exit 1 if a notebook has something to convert")
    args = ap.parse_args(argv)
    paths = args.paths or default_paths()
    todo, all_problems = [], []
    for path in paths:
        rel = path.resolve().relative_to(ROOT) if path.resolve().is_relative_to(ROOT) else path
        if args.check:
            nb = json.loads(path.read_text(encoding="utf-8"))
            n, p = convert_notebook(nb, str(rel))
        else:
            with _lock(path):
                nb = json.loads(path.read_text(encoding="utf-8"))
                n, p = convert_notebook(nb, str(rel))
                if n:
                    path.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        all_problems += p
        if n:
            todo.append(rel)
            print(f"{rel}: {n} change{'s' if n != 1 else ''}" + (" to make" if args.check else ""))
    for p in all_problems:
        print("left as it is:", p, file=sys.stderr)
    if args.check and todo:
        return 1
    return 2 if all_problems else 0


if __name__ == "__main__":
    sys.exit(main())
