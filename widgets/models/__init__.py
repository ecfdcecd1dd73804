"""Pure models: numbers in, numbers or small dataclasses out. Standard library and numpy only."""

from . import memory_hierarchy  # noqa: F401
