"""Doctrees without a copy of the build environment.

A node parsed inside a nested document (the API pages' ``{eval-rst}`` blocks, where autodoc writes
the docstrings) keeps a reference to that document, whose settings hold the whole Sphinx build
environment (``settings.env``). Sphinx clears ``env`` from the page's own document before it
pickles the doctree, not from a nested one: each API page's doctree carried a copy of the
environment, 10 MB of the 11 MB it weighed (126 MB of doctrees for the book, 110 MB of them the
API pages; unpickling them was the build's largest single cost, measured for issue 13).

Once a page is read, every node is attached to the page's own document (``doctree-read``), so the
nested document and the environment behind it are not pickled.
"""

from __future__ import annotations


def _attach_to_page(app, doctree) -> None:
    for node in doctree.findall():
        if node.__dict__.get("_document", doctree) is not doctree:
            node.document = doctree


def setup(app):
    app.connect("doctree-read", _attach_to_page, priority=0)  # before the collectors copy titles into env.tocs
    return {"parallel_read_safe": True, "parallel_write_safe": True}
