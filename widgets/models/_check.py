"""Input checks shared by every model: one sentence per bad input, naming the parameter,
the value and what is valid. Calculators show that sentence instead of a traceback."""

from __future__ import annotations

import math
import numbers
from typing import Iterable


def number(name: str, value) -> float:
    """Return ``value`` as a float, or raise ``ValueError`` if it is not a finite real number."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ValueError(f"{name} must be a real number, got {value!r}")
    v = float(value)
    if not math.isfinite(v):
        raise ValueError(f"{name} must be finite, got {value!r}")
    return v


def positive(name: str, value) -> float:
    """A finite number > 0."""
    v = number(name, value)
    if v <= 0:
        raise ValueError(f"{name} must be > 0, got {value!r}")
    return v


def non_negative(name: str, value) -> float:
    """A finite number >= 0."""
    v = number(name, value)
    if v < 0:
        raise ValueError(f"{name} must be >= 0, got {value!r}")
    return v


def fraction(name: str, value, *, open_low: bool = False) -> float:
    """A number in [0, 1] (or (0, 1] with ``open_low``)."""
    v = number(name, value)
    if v > 1 or v < 0 or (open_low and v == 0):
        low = "(0" if open_low else "[0"
        raise ValueError(f"{name} must be in {low}, 1], got {value!r}")
    return v


def integer(name: str, value, *, minimum: int | None = None, maximum: int | None = None) -> int:
    """An integer (numpy integers accepted) within optional bounds."""
    if isinstance(value, bool):
        raise ValueError(f"{name} must be an integer, got {value!r}")
    if not isinstance(value, numbers.Integral):
        if isinstance(value, numbers.Real) and math.isfinite(value) and float(value).is_integer():
            value = int(value)
        else:
            raise ValueError(f"{name} must be an integer, got {value!r}")
    v = int(value)
    if minimum is not None and v < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    if maximum is not None and v > maximum:
        raise ValueError(f"{name} must be an integer <= {maximum}, got {value!r}")
    return v


def choice(name: str, value, valid: Iterable[str]) -> str:
    """One of a fixed set of strings (case-insensitive); the error lists the valid ones."""
    options = list(valid)
    if isinstance(value, str):
        for option in options:
            if value.lower() == option.lower():
                return option
    raise ValueError(f"{name} must be one of {', '.join(map(repr, options))}; got {value!r}")
