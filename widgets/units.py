"""Units used throughout the book.

Rates are decimal (1 GB/s = 1e9 B/s, 1 TFLOP/s = 1e12 FLOP/s), as datasheets quote them.
Capacities are binary where the hardware is (1 KiB = 1024 B, 1 GiB = 2**30 B): shared memory,
caches and HBM stacks come in powers of two.

Every formatter picks its prefix automatically and always prints the unit, so a number on
the page can never lose its unit.
"""

from __future__ import annotations

from . import _check

# Decimal multipliers (rates, FLOP counts, HBM marketing sizes).
GIGA = 1e9
TERA = 1e12

# Binary capacities.
KiB = 1024
MiB = 1024**2
GiB = 1024**3
TiB = 1024**4

# Rates.
GB_PER_S = 1e9  # bytes per second
TB_PER_S = 1e12
TFLOP_PER_S = 1e12

# Time.
MS = 1e-3

_DECIMAL = [(1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"), (1.0, "")]
_BINARY = [(TiB, "Ti"), (GiB, "Gi"), (MiB, "Mi"), (KiB, "Ki"), (1, "")]
_TIME = [(1.0, "s"), (1e-3, "ms"), (1e-6, "µs"), (1e-9, "ns")]


MAX_DIGITS = 17  # a float has at most 17 significant decimal digits


def _check_finite(name: str, value: float) -> float:
    """A finite real number (negative allowed: a formatter may show a difference)."""
    return _check.number(name, value)


def _check_digits(digits) -> int:
    return _check.integer("digits", digits, minimum=1, maximum=MAX_DIGITS)


def _scaled(value: float, table, digits: int) -> tuple[str, str]:
    mag = abs(value)
    i = next((k for k, (factor, _p) in enumerate(table) if mag >= factor), len(table) - 1)
    factor, prefix = table[i]
    text = f"{value / factor:.{digits}g}"
    if "e+" in text:  # 1010 KiB or 999.7 kB rounded up: never Python's 1.01e+03
        if i > 0:
            factor, prefix = table[i - 1]
            return f"{value / factor:.{digits}g}", prefix
        text = f"{value / factor:,.0f}"
    return text, prefix


def fmt_rate(value: float, unit: str = "B/s", digits: int = 3) -> str:
    """Format a decimal rate (or count) with an SI prefix and a base unit.

    ``unit`` is the base unit (``"B/s"``, ``"FLOP/s"``); the prefix is decimal (k, M, G, T, P).

    Explained in :doc:`/book/notation` > Notation and units.

    Parameters
    ----------
    value : float
        The quantity, in the base unit [unit], finite (negative allowed: a difference).
    unit : str, optional
        The base unit printed after the prefix.
    digits : int, optional
        Significant digits [-], 1 to 17.

    Returns
    -------
    str
        Number, prefix and unit.

    Raises
    ------
    ValueError
        If ``value`` is not a finite number, ``unit`` is not a string or ``digits`` is out of range.

    Examples
    --------
    >>> fmt_rate(4.8e12)
    '4.8 TB/s'
    >>> fmt_rate(2.5e9, "FLOP/s")
    '2.5 GFLOP/s'
    """
    v = _check_finite("value", value)
    unit = _check.text("unit", unit)
    num, prefix = _scaled(v, _DECIMAL, _check_digits(digits))
    return f"{num} {prefix}{unit}"


def fmt_bytes_per_s(value: float, digits: int = 3) -> str:
    """Format a bandwidth with a decimal prefix and the unit B/s.

    Explained in :doc:`/book/notation` > Notation and units.

    Parameters
    ----------
    value : float
        The quantity [B/s], finite (negative allowed: a difference).
    digits : int, optional
        Significant digits [-], 1 to 17.

    Returns
    -------
    str
        Number, prefix and unit.

    Raises
    ------
    ValueError
        If ``value`` is not a finite number or ``digits`` is out of range.

    Examples
    --------
    >>> fmt_bytes_per_s(3.35e12)
    '3.35 TB/s'
    """
    return fmt_rate(value, "B/s", digits)


def fmt_flop_per_s(value: float, digits: int = 3) -> str:
    """Format a compute rate with a decimal prefix and the unit FLOP/s.

    Explained in :doc:`/book/notation` > Notation and units.

    Parameters
    ----------
    value : float
        The quantity [FLOP/s], finite (negative allowed: a difference).
    digits : int, optional
        Significant digits [-], 1 to 17.

    Returns
    -------
    str
        Number, prefix and unit.

    Raises
    ------
    ValueError
        If ``value`` is not a finite number or ``digits`` is out of range.

    Examples
    --------
    >>> fmt_flop_per_s(989e12)
    '989 TFLOP/s'
    """
    return fmt_rate(value, "FLOP/s", digits)


def fmt_flop(value: float, digits: int = 3) -> str:
    """Format a count of floating-point operations with a decimal prefix and the unit FLOP.

    Explained in :doc:`/book/notation` > Notation and units.

    Parameters
    ----------
    value : float
        The quantity [FLOP], finite (negative allowed: a difference).
    digits : int, optional
        Significant digits [-], 1 to 17.

    Returns
    -------
    str
        Number, prefix and unit.

    Raises
    ------
    ValueError
        If ``value`` is not a finite number or ``digits`` is out of range.

    Examples
    --------
    >>> fmt_flop(2 * 8192**3)
    '1.1 TFLOP'
    """
    return fmt_rate(value, "FLOP", digits)


def fmt_bytes(value: float, digits: int = 3) -> str:
    """Format a capacity with a binary prefix (KiB, MiB, GiB, TiB).

    Explained in :doc:`/book/notation` > Notation and units.

    Parameters
    ----------
    value : float
        The capacity [B], finite (negative allowed: a difference).
    digits : int, optional
        Significant digits [-], 1 to 17.

    Returns
    -------
    str
        Number, binary prefix and ``B``.

    Raises
    ------
    ValueError
        If ``value`` is not a finite number or ``digits`` is out of range.

    Examples
    --------
    >>> fmt_bytes(50 * MiB)
    '50 MiB'
    """
    v = _check_finite("value", value)
    num, prefix = _scaled(v, _BINARY, _check_digits(digits))
    return f"{num} {prefix}B"


def fmt_time(seconds: float, digits: int = 3) -> str:
    """Format a duration in s, ms, µs or ns.

    Explained in :doc:`/book/notation` > Notation and units.

    Parameters
    ----------
    seconds : float
        The duration [s], finite (negative allowed: a difference).
    digits : int, optional
        Significant digits [-], 1 to 17.

    Returns
    -------
    str
        Number and unit.

    Raises
    ------
    ValueError
        If ``seconds`` is not a finite number or ``digits`` is out of range.

    Examples
    --------
    >>> fmt_time(3.2e-6)
    '3.2 µs'
    """
    v = _check_finite("seconds", seconds)
    digits = _check_digits(digits)
    if v == 0:
        return "0 s"
    mag = abs(v)
    for factor, unit in _TIME:
        if mag >= factor:
            return f"{v / factor:.{digits}g} {unit}"
    return f"{v / 1e-9:.{digits}g} ns"


def fmt_intensity(flop_per_byte: float, digits: int = 3) -> str:
    """Format an arithmetic intensity in FLOP/B; large values keep plain digits (no e-notation).

    Explained in :doc:`/book/notation` > Notation and units.

    Parameters
    ----------
    flop_per_byte : float
        Arithmetic intensity [FLOP/B], finite.
    digits : int, optional
        Significant digits [-], 1 to 17.

    Returns
    -------
    str
        Number and ``FLOP/B``.

    Raises
    ------
    ValueError
        If ``flop_per_byte`` is not a finite number or ``digits`` is out of range.

    Examples
    --------
    >>> fmt_intensity(206.2)
    '206 FLOP/B'
    >>> fmt_intensity(1365.3)
    '1,365 FLOP/B'
    >>> fmt_intensity(0.0833)
    '0.0833 FLOP/B'
    """
    v = _check_finite("flop_per_byte", flop_per_byte)
    digits = _check_digits(digits)
    if abs(v) >= 10 ** digits:  # no e-notation: 1.37e+03 reads badly in prose and readouts
        return f"{v:,.0f} FLOP/B"
    return f"{v:.{digits}g} FLOP/B"
