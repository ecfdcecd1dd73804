"""Numbers in the prose, in a form that both the published book and JupyterLab render.

A chapter's code cell stores a formatted value on the notebook's one namespace, and the markdown
names it with the MyST ``{eval}`` role::

    prose.hbm = fmt_bytes_per_s(h200.hbm_bytes_per_s)        # code cell
    The H200 reads {eval}`prose.hbm` from HBM.                # markdown cell

- The book build (Jupyter Book 1, myst-nb with ``execute_notebooks: inline``) runs the notebook's
  code cells in order and evaluates each ``{eval}`` expression in the same kernel as it reaches it.
- JupyterLab with ``jupyterlab-myst`` evaluates them as kernel user-expressions when the markdown
  cell is run (Run All), and shows the text in place of the role.

Both show a result's ``text/plain`` form. A ``str``'s would carry quotes (and escaped
backslashes); every value stored here is a :class:`Text`, whose ``repr`` is the text itself, so
both show exactly the formatted text. Non-strings are stored as ``str(value)`` (a numpy scalar
reads ``3.2``, not ``np.float64(3.2)``): format numbers before storing them.

The expressions the build accepts are ``prose.<name>`` (``nb_eval_name_regex`` in ``_config.yml``);
``tests/tools/prose_convert.py`` rewrote the chapters' former myst-nb ``glue`` calls into this form.
"""

from __future__ import annotations

import keyword
import re
from collections.abc import Iterator, Mapping
from typing import Any

__all__ = ["Prose", "Text", "prose", "NAME"]

NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
"""What a key may be: a Python identifier (the markdown writes ``{eval}`prose.<key>```)."""


class Text(str):
    """A ``str`` whose ``repr`` is its text: shown without quotes by myst-nb and jupyterlab-myst."""

    __slots__ = ()

    def __repr__(self) -> str:
        return str.__str__(self)

    def _repr_pretty_(self, p, cycle) -> None:  # IPython's pretty printer (the text/plain of a result)
        p.text(str.__str__(self))


def _key(key: Any) -> str:
    if not isinstance(key, str) or not NAME.fullmatch(key) or keyword.iskeyword(key) or key.startswith("_") or key in _METHODS:
        raise ValueError(
            f"key must be a Python identifier, not starting with '_' and not one of {sorted(_METHODS)} "
            f"(the prose writes {{eval}}`prose.<key>`); got {key!r}"
        )
    return key


class Prose:
    """The values the prose of one notebook shows, by name.

    >>> p = Prose()
    >>> p.bw = "4.8 TB/s"
    >>> p["n_gpus"] = 8
    >>> p.bw, p.n_gpus
    (4.8 TB/s, 8)
    >>> sorted(p)
    ['bw', 'n_gpus']
    >>> p.missing
    Traceback (most recent call last):
    ...
    AttributeError: prose has no value 'missing' (set it in a code cell above: prose.missing = ...)
    """

    __slots__ = ("_values",)

    def __init__(self) -> None:
        object.__setattr__(self, "_values", {})

    def __setattr__(self, key: str, value: Any) -> None:
        self[key] = value

    def __setitem__(self, key: str, value: Any) -> None:
        self._values[_key(key)] = Text(value if isinstance(value, str) else str(value))

    def __getattr__(self, key: str) -> Text:
        if key.startswith("_"):
            raise AttributeError(key)
        try:
            return self._values[key]
        except KeyError:
            raise AttributeError(
                f"prose has no value {key!r} (set it in a code cell above: prose.{key} = ...)"
            ) from None

    def __getitem__(self, key: str) -> Text:
        return self._values[key]

    def __contains__(self, key: object) -> bool:
        return key in self._values

    def __iter__(self) -> Iterator[str]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def set(self, key: str, value: Any) -> Text:
        """Store ``value`` under ``key`` and return it (for use inside an expression)."""
        self[key] = value
        return self._values[key]

    def update(self, values: Mapping[str, Any]) -> None:
        """Store each ``key: value`` of ``values``."""
        for key, value in values.items():
            self[key] = value

    def clear(self) -> None:
        """Forget every value (a notebook re-run from the top starts clean)."""
        self._values.clear()

    def __repr__(self) -> str:
        return f"<prose: {len(self._values)} values>"


_METHODS = frozenset(name for name in vars(Prose) if not name.startswith("_"))

prose = Prose()
"""The namespace a notebook's prose reads (``from widgets.prose import prose``)."""
