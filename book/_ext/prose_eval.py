"""The prose's ``{eval}`prose.<key>``` roles see every code cell above them, hidden ones included.

With ``execute_notebooks: inline`` myst-nb runs a notebook's code cells lazily, when it renders
each one, and evaluates an ``{eval}`` role as soon as it reads it. A cell tagged ``remove-cell``
(the chapters' hidden setup and number cells) is never rendered, so it runs only when the next
*visible* code cell does: a markdown cell right below a hidden cell would be evaluated before that
cell ran (``NameError: name 'prose' is not defined``). This role first runs every code cell above
its markdown cell (myst-nb numbers a notebook's source lines ``(cell index + 1) * 10000 + line``),
then evaluates as myst-nb's does. Cells still run once each, in order.
"""

from __future__ import annotations

import re

from myst_nb.core.execute.base import EvalNameError
from myst_nb.core.execute.inline import NotebookClientInline
from myst_nb.ext.eval import EvalRoleAny
from sphinx.application import Sphinx

CELL_LINES = 10000  # myst_nb.core.nb_to_tokens: start_line = (cell_index + 1) * 10000


def run_cells_above(role) -> None:
    """With inline execution, run every code cell above the markdown cell that holds ``role``."""
    document = role.document
    element = document["nb_renderer"] if "nb_renderer" in document else None
    client = getattr(getattr(element, "renderer", None), "nb_client", None)
    cell_index = (role.line or 0) // CELL_LINES - 1
    if isinstance(client, NotebookClientInline) and cell_index >= 1:
        client.code_cell_outputs(cell_index - 1)  # runs the cells up to the one above (each only once)


class EvalRoleAfterCellsAbove(EvalRoleAny):
    """myst-nb's ``{eval}`` role, run after every code cell above the markdown cell."""

    def run(self):
        run_cells_above(self)
        return super().run()


def _after_cells_above(cls) -> None:
    """The same for myst-nb's glue roles (``{glue:text}`` ... while notebooks still use them)."""
    if getattr(cls.run, "_after_cells_above", False):
        return
    original = cls.run

    def run(self):
        run_cells_above(self)
        return original(self)

    run._after_cells_above = True
    cls.run = run


def _eval_variable(self, name: str):
    """``NotebookClientInline.eval_variable``, through ``display()`` instead of the display hook.

    myst-nb runs the expression as a cell without history; IPython's display hook stays silent
    when the last cell *in* history ended with ``;`` (``ui.check_...(answer);``), so every role
    after such a cell got no output. ``display()`` always publishes the value's mime bundle.
    """
    if not re.match(self.nb_config.eval_name_regex, name):
        raise EvalNameError(name)
    return self._client.eval_expression(f"__import__('IPython').display.display({name})")


def setup(app: Sphinx):
    NotebookClientInline.eval_variable = _eval_variable
    # loaded after myst_nb (a local extension): this registration replaces myst-nb's eval role
    app.add_role("eval", EvalRoleAfterCellsAbove(), override=True)
    from myst_nb.ext.glue import roles

    for cls in (roles.PasteRoleAny, roles.PasteTextRole, roles.PasteMarkdownRole):
        _after_cells_above(cls)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
