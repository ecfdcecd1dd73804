"""Distinct author-year citation labels: ``[NVIDIA, 2025a]``, ``[NVIDIA, 2025b]``.

With ``bibtex_reference_style: author_year`` every document of one author and one year cites as
the same ``[NVIDIA, 2025]``. This extension gives such documents the usual year suffixes (a, b,
c, ... in the order of their titles), in the citation and in the bibliography alike. Entries of
the same document under different keys (same author, year and title) share their suffix.

The bib files under ``book/`` are not changed: at ``config-inited`` each is parsed and written,
with the suffixed years, to a folder of the build directory, and ``bibtex_bibfiles`` points at
those copies (sphinxcontrib-bibtex reads them at ``builder-inited``, after this).
"""

from __future__ import annotations

import re
import string
from collections import defaultdict
from pathlib import Path

from pybtex.database import BibliographyData
from pybtex.database.input.bibtex import Parser
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
    """``{key: suffix}`` for every entry whose author label and year it shares with a document of
    another title; documents are lettered in the order of their titles."""
    groups: dict[tuple[str, str], dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    for key, entry in entries.items():
        year = entry.fields.get("year")
        if year:
            groups[(author_label(entry).lower(), year.strip())][_title_key(entry)].append(key)
    out: dict[str, str] = {}
    for titles in groups.values():
        if len(titles) < 2:
            continue
        if len(titles) > len(string.ascii_lowercase):
            raise ValueError(f"more than 26 documents share an author and year: {sorted(titles)}")
        for letter, title in zip(string.ascii_lowercase, sorted(titles)):
            for key in titles[title]:
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


def setup(app: Sphinx):
    # after sphinxcontrib-bibtex registered bibtex_bibfiles; before its builder-inited reads them
    app.connect("config-inited", _on_config_inited, priority=900)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
