"""Experiments: time real work on the reader's device and return dataclasses / JSON-able dicts.

Each topic module ``widgets.experiments.<topic>`` exposes ``run_all() -> dict``, which
``python -m widgets.measure`` calls and records with provenance.
"""

TOPICS = ("memory_hierarchy", "simt", "tensor_cores", "collectives", "serving")
