"""Input checks shared by every public function of ``widgets``: one sentence per bad input.

Every message names the parameter as the caller spelled it, shows the value, and says what is
valid, e.g. ``"n must be an integer in [2, 1048576], got 4611686018427387904"``. Calculators show
that sentence instead of a traceback. Rules:

- a *number* is a finite real scalar: Python ``int``/``float`` or a numpy scalar; ``bool`` is not
  a number, nor is a string, ``None``, a list or an array;
- an *integer* is a Python ``int`` or numpy integer (returned as an exact Python ``int``, so no
  numpy arithmetic can wrap afterwards), or a float that holds an integer exactly (``2.0``, at most
  ``2**53``); it lies in ``[minimum, maximum]``; without explicit bounds these are
  ``-MAX_INT`` and ``MAX_INT = 2**53`` (sizes in bytes or elements; the largest integer a float holds exactly).
  Counts that drive a loop or an allocation (ranks, buckets, steps) must pass a smaller bound;
- an *enum* is a string from a fixed list (case-insensitive); a *flag* is a ``bool``;
  a *name* (free text) is a ``str``.

No raw conversion message ("cannot convert float NaN to integer") ever reaches the caller.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterable

try:  # the checks need only the standard library; numpy scalars and arrays are accepted when present
    import numpy as np
except ImportError:  # pragma: no cover - e.g. an in-browser kernel without numpy
    np = None

__all__ = ["MAX_INT", "number", "positive", "non_negative", "in_range", "fraction", "integer", "choice", "flag", "text",
           "optional", "numbers_list", "integers_list", "array", "finite_result"]

Mapping_types = (dict,)

MAX_INT = 2**53
"""Default upper bound of :func:`integer`: every integer up to it is exact as a float too."""


def _show(value) -> str:
    """``repr`` of a value, shortened so that a message stays one readable line."""
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _is_bool(value) -> bool:
    return isinstance(value, bool) or (np is not None and isinstance(value, np.bool_))


def _is_real_scalar(value) -> bool:
    if type(value) is float or type(value) is int:  # the common case, without the ABC checks (hot in sweeps)
        return True
    return not _is_bool(value) and isinstance(value, numbers.Real)


def number(name: str, value) -> float:
    """``value`` as a float, or ``ValueError`` unless it is a finite real scalar (not a bool).

    >>> number("latency_s", 2e-6)
    2e-06
    >>> number("latency_s", float("nan"))
    Traceback (most recent call last):
    ...
    ValueError: latency_s must be a finite number, got nan
    """
    if not _is_real_scalar(value):
        raise ValueError(f"{name} must be a finite real number, got {_show(value)}")
    try:
        v = float(value)
    except (OverflowError, ValueError, TypeError):  # a huge int or an exotic Real
        raise ValueError(f"{name} must be a finite number, got {_show(value)}") from None
    if not math.isfinite(v):
        raise ValueError(f"{name} must be a finite number, got {_show(value)}")
    return v


def positive(name: str, value) -> float:
    """A finite number > 0."""
    v = number(name, value)
    if v <= 0:
        raise ValueError(f"{name} must be > 0, got {_show(value)}")
    return v


def non_negative(name: str, value) -> float:
    """A finite number >= 0."""
    v = number(name, value)
    if v < 0:
        raise ValueError(f"{name} must be >= 0, got {_show(value)}")
    return v


def in_range(name: str, value, low: float, high: float, unit: str = "") -> float:
    """A finite number in ``[low, high]`` (``unit``, if given, follows the interval in the message)."""
    v = number(name, value)
    if not low <= v <= high:
        raise ValueError(f"{name} must be in [{low:g}, {high:g}]{' ' + unit if unit else ''}, got {_show(value)}")
    return v


def fraction(name: str, value, *, open_low: bool = False) -> float:
    """A number in [0, 1] (or (0, 1] with ``open_low``)."""
    v = number(name, value)
    if v > 1 or v < 0 or (open_low and v == 0):
        low = "(0" if open_low else "[0"
        raise ValueError(f"{name} must be in {low}, 1], got {_show(value)}")
    return v


def integer(name: str, value, *, minimum: int | None = None, maximum: int | None = None) -> int:
    """An exact Python ``int`` in ``[minimum, maximum]`` (defaults ``-MAX_INT`` and ``MAX_INT``).

    >>> integer("n", 8, minimum=2)
    8
    >>> integer("n", 1e308)
    Traceback (most recent call last):
    ...
    ValueError: n must be an integer in [-9007199254740992, 9007199254740992], got 1e+308
    """
    minimum = -MAX_INT if minimum is None else minimum
    maximum = MAX_INT if maximum is None else maximum
    if type(value) is int and minimum <= value <= maximum:  # the common case, without the ABC checks
        return value
    span = f" in [{minimum}, {maximum}]"
    if _is_bool(value) or not isinstance(value, numbers.Real):
        raise ValueError(f"{name} must be an integer{span}, got {_show(value)}")
    if isinstance(value, numbers.Integral):
        v = int(value)
    else:
        try:
            f = float(value)
        except (OverflowError, ValueError, TypeError):
            raise ValueError(f"{name} must be an integer{span}, got {_show(value)}") from None
        if not math.isfinite(f) or not f.is_integer():
            raise ValueError(f"{name} must be an integer{span}, got {_show(value)}")
        if abs(f) > MAX_INT:  # never build a 309-digit int out of 1e308
            raise ValueError(f"{name} must be an integer{span}, got {_show(value)}")
        v = int(f)
    if v < minimum:
        raise ValueError(f"{name} must be an integer{span}, got {_show(value)}")
    if v > maximum:
        raise ValueError(f"{name} must be an integer{span}, got {_show(value)}")
    return v


def choice(name: str, value, valid: Iterable[str]) -> str:
    """One of a fixed set of strings (case-insensitive); the error lists the valid ones."""
    options = list(valid)
    if isinstance(value, str):
        for option in options:
            if value.lower() == option.lower():
                return option
    raise ValueError(f"{name} must be one of {', '.join(map(repr, options))}; got {_show(value)}")


def flag(name: str, value) -> bool:
    """A ``bool`` (numpy bools accepted); ``1``, ``"yes"`` or ``None`` are not flags."""
    if _is_bool(value):
        return bool(value)
    raise ValueError(f"{name} must be True or False, got {_show(value)}")


def text(name: str, value, *, empty: bool = False) -> str:
    """A string (free text: a label, a name); not empty unless ``empty``."""
    if not isinstance(value, str):
        raise ValueError(f"{name} must be a string, got {_show(value)}")
    if not empty and not value.strip():
        raise ValueError(f"{name} must not be empty, got {value!r}")
    return value


def optional(check, name: str, value, *args, **kwargs):
    """``None`` stays ``None``; anything else goes through ``check(name, value, ...)``."""
    return None if value is None else check(name, value, *args, **kwargs)


def numbers_list(name: str, values, *, min_len: int = 1, max_len: int = 2**20, check=None) -> list:
    """A sequence (list, tuple, 1-D array) of finite numbers, returned as a list of floats.

    Each item goes through ``check(f"{name}[i]", item)`` (default :func:`number`), so a message
    names the item: ``"sizes_bytes[2] must be >= 0, got -1"``.
    """
    if isinstance(values, (str, bytes, Mapping_types)) or not hasattr(values, "__len__") or not hasattr(values, "__iter__"):
        raise ValueError(f"{name} must be a list of numbers, got {_show(values)}")
    if getattr(values, "ndim", 1) != 1:
        raise ValueError(f"{name} must be a 1-D list of numbers, got an array of shape {values.shape}")
    n = len(values)
    if not min_len <= n <= max_len:
        raise ValueError(f"{name} must hold {min_len} to {max_len} numbers, got {n}")
    check = check or number
    return [check(f"{name}[{i}]", v) for i, v in enumerate(values)]


def integers_list(name: str, values, *, minimum: int | None = None, maximum: int | None = None, min_len: int = 1,
                  max_len: int = 2**20) -> list:
    """A sequence of integers, each in ``[minimum, maximum]`` (as :func:`integer`), returned as a list
    of exact ``int``; a message names the item (``"batches[1] must be an integer in [0, 10], got -2"``).

    >>> integers_list("batches", (1, 8.0, 64), minimum=0)
    [1, 8, 64]
    """
    return numbers_list(name, values, min_len=min_len, max_len=max_len,
                        check=lambda item, v: integer(item, v, minimum=minimum, maximum=maximum))


def array(name: str, value, *, check_low: float | None = None, strict_low: bool = False) -> np.ndarray:
    """A finite real scalar or array of them, as a float ndarray (for elementwise models).

    ``check_low``: every element must be >= it (> it with ``strict_low``).
    """
    import numpy as np

    if isinstance(value, (str, bytes)) or _is_bool(value) or value is None:
        raise ValueError(f"{name} must be a finite number or an array of them, got {_show(value)}")
    try:
        a = np.asarray(value)
    except Exception:  # noqa: BLE001 - ragged lists and exotic objects
        raise ValueError(f"{name} must be a finite number or an array of them, got {_show(value)}") from None
    if a.dtype.kind not in "iuf":
        raise ValueError(f"{name} must be a finite number or an array of them, got {_show(value)}")
    a = a.astype(float)
    if not np.all(np.isfinite(a)):
        raise ValueError(f"{name} must be finite, got {_show(value)}")
    if check_low is not None:
        bad = a <= check_low if strict_low else a < check_low
        if np.any(bad):
            op = ">" if strict_low else ">="
            raise ValueError(f"{name} must be {op} {check_low:g}, got {_show(value)}")
    return a



def finite_result(what: str, value, **inputs):
    """Return ``value`` if it is finite (a scalar or array); otherwise ``ValueError`` naming the
    inputs, the farthest from 1 in orders of magnitude first (a huge factor or a tiny divisor),
    since one of them is far outside any physical range.

    For models whose inputs are each finite but whose result overflows (``1e308 * 2``, ``1 / 5e-324``):

    >>> finite_result("peak_flop_per_s", 2 * 1e308, sms=132, clock_hz=1e308)
    Traceback (most recent call last):
    ...
    ValueError: peak_flop_per_s overflows to inf: clock_hz=1e+308, sms=132: one of these is far outside any physical range
    """
    try:
        ok = math.isfinite(value)
    except TypeError:
        import numpy as np

        ok = bool(np.all(np.isfinite(np.asarray(value, dtype=float))))
    if ok:
        return value

    def orders(v):
        try:
            f = abs(float(v))
        except (TypeError, ValueError, OverflowError):
            return math.inf
        return abs(math.log10(f)) if f > 0 else 0.0

    named = ", ".join(f"{k}={_show(v)}" for k, v in sorted(inputs.items(), key=lambda kv: -orders(kv[1])))
    shown = "nan" if isinstance(value, float) and math.isnan(value) else "inf"
    raise ValueError(f"{what} overflows to {shown}: {named}: one of these is far outside any physical range")
