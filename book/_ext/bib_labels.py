"""Distinct author-year citation labels: ``[NVIDIA, 2025a]``, ``[NVIDIA, 2025b]``.

With ``bibtex_reference_style: author_year`` every document of one author and one year cites as
the same ``[NVIDIA, 2025]``. This extension gives such documents the usual year suffixes (a, b,
c, ... in the order of their titles), in the citation and in the bibliography alike. Two keys for
the same document (e.g. a guide entered by two chapters) are two bibliography entries and get
two letters, so every label names exactly one entry; merging such keys removes the second.

The bib files under ``book/`` are not changed: at ``config-inited`` each is parsed and written,
with the suffixed years, to a folder of the build directory, and ``bibtex_bibfiles`` points at
those copies (sphinxcontrib-bibtex reads them at ``builder-inited``, after this).

The bibliography's labels are the citations' labels (formatting style ``gpubook``, set as
``bibtex_default_style`` in ``_config.yml``).

``and others`` at the end of an author list means "et al." (as in BibTeX's plain.bst), whatever
the number of names before it: ``{Jouppi, Norman P. and others}`` is labelled and cited
``Jouppi et al.`` and listed as "Norman P. Jouppi et al.", never "Jouppi and others". For the
citations this extension replaces sphinxcontrib-bibtex's ``author_year`` referencing style (the
``bibtex_reference_style`` of ``_config.yml``) by a subclass that knows that rule.
"""

from __future__ import annotations

import re
import string
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from pybtex.backends.plaintext import Backend as PlaintextBackend
from pybtex.database import BibliographyData
from pybtex.database.input.bibtex import Parser
from pybtex.plugin import register_plugin
from pybtex.richtext import Tag, Text
from pybtex.style.formatting.plain import Style as PlainStyle
from pybtex.style.labels import BaseLabelStyle
from pybtex.style.template import FieldIsMissing
from pybtex.style.template import join as plain_join
from pybtex.style.template import node as plain_node
from pybtex.style.template import sentence as plain_sentence
from sphinx.application import Sphinx
from sphinxcontrib.bibtex.plugin import register_plugin as register_reference_style
from sphinxcontrib.bibtex.style.referencing import PersonStyle
from sphinxcontrib.bibtex.style.referencing.author_year import AuthorYearReferenceStyle
from sphinxcontrib.bibtex.style.template import field as entry_field
from sphinxcontrib.bibtex.style.template import first_of, join, node, optional, tag


def _plain(text: str) -> str:
    return re.sub(r"[{}\\]", "", text).strip()


def _is_others(person) -> bool:
    """``others`` as the last name of a BibTeX list: "and more authors" (pybtex parses it as a person)."""
    return str(person) == "others"


def split_others(persons) -> tuple[list, bool]:
    """``(named persons, whether the list ended in "and others")``."""
    persons = list(persons)
    if persons and _is_others(persons[-1]):
        return persons[:-1], True
    return persons, False


def author_label(entry) -> str:
    """What the author-year style prints before the year: the last name of one author, of both of
    two, or of the first followed by "et al." (also when the list ends in "and others"; editors,
    then the title, when there is no author)."""
    for role in ("author", "editor"):
        people, others = split_others(entry.persons.get(role, ()))
        if people:
            last = [_plain(" ".join(p.last_names)) for p in people]
            if len(last) == 1 and not others:
                return last[0]
            if len(last) == 2 and not others:
                return f"{last[0]} and {last[1]}"
            return f"{last[0]} et al."
    return _plain(entry.fields.get("title", ""))


def _title_key(entry) -> str:
    return re.sub(r"[^a-z0-9]+", " ", _plain(entry.fields.get("title", "")).lower()).strip()


def year_suffixes(entries: dict) -> dict[str, str]:
    """``{key: suffix}`` for every entry that shares its author label and year with another entry;
    letters follow the order of the titles (then of the keys)."""
    groups: dict[tuple[str, str], list[str]] = defaultdict(list)
    for key, entry in entries.items():
        year = entry.fields.get("year")
        if year:
            groups[(author_label(entry).lower(), year.strip())].append(key)
    out: dict[str, str] = {}
    for keys in groups.values():
        if len(keys) < 2:
            continue
        if len(keys) > len(string.ascii_lowercase):
            raise ValueError(f"more than 26 entries share an author and year: {sorted(keys)}")
        ordered = sorted(keys, key=lambda k: (_title_key(entries[k]), k))
        for letter, key in zip(string.ascii_lowercase, ordered):
            out[key] = letter
    return out


def _on_config_inited(app: Sphinx, config) -> None:
    sources = [(Path(app.confdir) / f).resolve() for f in (config.bibtex_bibfiles or [])]
    parsed = []
    everything: dict = {}
    for src in sources:
        data = Parser(encoding=config.bibtex_encoding).parse_file(src)
        parsed.append((src, data))
        everything.update(data.entries)
    suffix = year_suffixes(everything)
    out_dir = Path(app.doctreedir).parent / "bib_labels"
    out_dir.mkdir(parents=True, exist_ok=True)
    copies = []
    for i, (src, data) in enumerate(parsed):
        for key, entry in data.entries.items():
            if key in suffix:
                entry.fields["year"] = entry.fields["year"].strip() + suffix[key]
        dst = out_dir / f"{i:02d}_{src.name}"
        text = BibliographyData(entries=data.entries).to_string("bibtex")
        if not dst.exists() or dst.read_text(encoding="utf-8") != text:  # keep the mtime: no re-read
            dst.write_text(text, encoding="utf-8")
        copies.append(str(dst))
    config.bibtex_bibfiles = copies


class AuthorYearLabels(BaseLabelStyle):
    """Bibliography labels that match the citations: ``NVIDIA, 2025a``, ``Austin et al., 2025``
    (pybtex's alpha labels would read ``NVIDIA5ba``)."""

    def format_labels(self, sorted_entries):
        for entry in sorted_entries:
            yield f"{author_label(entry)}, {entry.fields.get('year', 'n.d.')}"


@plain_node
def _listed_names(children, context, role, **kwargs):
    """pybtex's ``names`` for the bibliography, with a final "others" printed as "et al."
    (plain.bst: "A et al.", "A, B, et al.")."""
    assert not children
    try:
        persons, others = split_others(context["entry"].persons[role])
    except KeyError:
        raise FieldIsMissing(role, context["entry"]) from None
    style = context["style"]
    formatted = [style.format_name(p, style.abbreviate_names) for p in persons]
    if not others:
        return plain_join(**kwargs)[formatted].format_data(context)
    listed = plain_join(sep=", ")[formatted].format_data(context)
    return Text(listed, ", et al." if len(formatted) > 1 else " et al.")


class AuthorYearStyle(PlainStyle):
    """pybtex's plain formatting with :class:`AuthorYearLabels`: ``bibtex_default_style: gpubook``."""

    default_label_style = "gpubook_author_year"

    def format_names(self, role, as_sentence=True):
        formatted = _listed_names(role, sep=", ", sep2=" and ", last_sep=", and ")
        return plain_sentence[formatted] if as_sentence else formatted


@node
def _cited_names(children, data, role, et_al, **kwargs):
    """sphinxcontrib-bibtex's ``names`` for citations, with a final "others" as "et al."."""
    assert not children
    try:
        persons, others = split_others(data["entry"].persons[role])
    except KeyError:
        raise FieldIsMissing(role, data["entry"]) from None
    person = data["style"].person
    formatted = [person.style_plugin.format(p, person.abbreviate) for p in persons]
    if not others:
        return join(**kwargs)[formatted].format_data(data)
    if kwargs.get("other") is not None:  # short form: first name only
        return Text(join[formatted[:1]].format_data(data), et_al)
    return Text(join(sep=kwargs.get("sep", ", "))[formatted].format_data(data), et_al)


@dataclass
class _EtAlPersonStyle(PersonStyle):
    def _kwargs(self, full: bool) -> dict:
        return dict(sep=self.sep, sep2=self.sep2, last_sep=self.last_sep, other=None if full else self.other,
                    et_al=self.other or Text(" ", Tag("em", "et al.")))  # fmt: skip

    def names(self, role: str, full: bool):
        return _cited_names(role=role, **self._kwargs(full))

    def author_or_editor_or_title(self, full: bool):
        kw = self._kwargs(full)
        return first_of[
            optional[_cited_names(role="author", **kw)],
            optional[_cited_names(role="editor", **kw)],
            tag("em")[entry_field("title")],
        ]


@dataclass
class GpubookAuthorYearReferenceStyle(AuthorYearReferenceStyle):
    """sphinxcontrib-bibtex's author-year citations, with "and others" cited as "et al."."""

    person: PersonStyle = field(default_factory=_EtAlPersonStyle)


register_plugin("pybtex.style.labels", "gpubook_author_year", AuthorYearLabels)
register_plugin("pybtex.style.formatting", "gpubook", AuthorYearStyle)
# ``bibtex_reference_style: author_year`` in _config.yml: the same style, "and others" as "et al."
register_reference_style("sphinxcontrib.bibtex.style.referencing", "author_year", GpubookAuthorYearReferenceStyle, force=True)
# The same class pybtex's entry point names, registered at run time: sphinxcontrib-bibtex looks the
# plain-text backend up for every citation it resolves, and pybtex answers a name it was not given
# at run time by scanning every installed package's entry points (16 ms a lookup here; 366
# citations: about 6 s of each build, measured for issue 13).
register_plugin("pybtex.backends", "plaintext", PlaintextBackend, force=True)


def setup(app: Sphinx):
    # after sphinxcontrib-bibtex registered bibtex_bibfiles; before its builder-inited reads them
    app.connect("config-inited", _on_config_inited, priority=900)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
