"""Calculators: a live form (ipywidgets) and a static form (plotly frames) per topic.

Importing this package registers the book's plotly renderer (see ``_render``).
"""

from ._core import error_html, frames_figure, live_form, table_html  # noqa: F401
