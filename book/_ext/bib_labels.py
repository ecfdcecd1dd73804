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
"""

from __future__ import annotations

import re
import string
from collections import defaultdict
from pathlib import Path

from pybtex.database import BibliographyData
from pybtex.database.input.bibtex import Parser
from pybtex.plugin import register_plugin
from pybtex.style.formatting.plain import Style as PlainStyle
from pybtex.style.labels import BaseLabelStyle
from sphinx.application import Sphinx


def _plain(text: str) -> str:
    return re.sub(r"[{}\\]", "", text).strip()


def author_label(entry) -> str:
    """What the author-year style prints before the year: the last name of one author, of both of
    two, or of the first followed by "et al." (editors, then the title, when there is no author)."""
    for role in ("author", "editor"):
        people = entry.persons.get(role)
        if people:
            last = [_plain(" ".join(p.last_names)) for p in people]
            if len(last) == 1:
                return last[0]
            if len(last) == 2:
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


class AuthorYearStyle(PlainStyle):
    """pybtex's plain formatting with :class:`AuthorYearLabels`: ``bibtex_default_style: gpubook``."""

    default_label_style = "gpubook_author_year"


register_plugin("pybtex.style.labels", "gpubook_author_year", AuthorYearLabels)
register_plugin("pybtex.style.formatting", "gpubook", AuthorYearStyle)


def setup(app: Sphinx):
    # after sphinxcontrib-bibtex registered bibtex_bibfiles; before its builder-inited reads them
    app.connect("config-inited", _on_config_inited, priority=900)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
