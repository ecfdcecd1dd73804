"""The library behind the GPU book: units, a GPU catalog, pure models, calculators and experiments.

Layering (imports point one way):
    units, hardware  <-  models  <-  ui, experiments
``widgets.models`` needs only the standard library and numpy; ``widgets.ui`` adds ipywidgets and
plotly; ``widgets.experiments`` adds torch (and Triton where a kernel is written in it).
"""

__version__ = "0.1.0"
