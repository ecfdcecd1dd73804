"""widgets.units: decimal rates, binary capacities, formatters that always print the unit."""

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from widgets import units as u


def test_constants_are_decimal_rates_and_binary_capacities():
    assert u.GB_PER_S == 1e9 and u.TB_PER_S == 1e12 and u.TFLOP_PER_S == 1e12
    assert u.KiB == 1024 and u.MiB == 1024**2 and u.GiB == 2**30


@pytest.mark.parametrize(
    "value, text",
    [
        (4.8e12, "4.8 TB/s"),  # H200 datasheet bandwidth
        (3.35e12, "3.35 TB/s"),
        (900e9, "900 GB/s"),
        (512.0, "512 B/s"),
        (0.0, "0 B/s"),
    ],
)
def test_fmt_bytes_per_s(value, text):
    assert u.fmt_bytes_per_s(value) == text


def test_fmt_flop_and_capacity_and_time():
    assert u.fmt_flop_per_s(989.4e12) == "989 TFLOP/s"
    assert u.fmt_flop_per_s(1.9789e15) == "1.98 PFLOP/s"
    assert u.fmt_flop(2 * 8192**3) == "1.1 TFLOP"
    assert u.fmt_bytes(60 * u.MiB) == "60 MiB"
    assert u.fmt_bytes(228 * u.KiB) == "228 KiB"
    assert u.fmt_bytes(141 * u.GiB) == "141 GiB"
    assert u.fmt_time(3.2e-6) == "3.2 µs"
    assert u.fmt_time(0.0125) == "12.5 ms"
    assert u.fmt_intensity(206.1) == "206 FLOP/B"


@given(st.floats(min_value=-1e18, max_value=1e18, allow_nan=False))
def test_formatters_always_print_the_unit(x):
    assert u.fmt_bytes_per_s(x).endswith("B/s")
    assert u.fmt_flop_per_s(x).endswith("FLOP/s")
    assert u.fmt_bytes(x).endswith("B")
    assert u.fmt_time(x).split()[-1] in {"s", "ms", "µs", "ns"}


@pytest.mark.parametrize("bad", [math.nan, math.inf, "fast", None])
def test_formatters_reject_non_numbers(bad):
    with pytest.raises(ValueError, match="value"):
        u.fmt_bytes_per_s(bad)


@pytest.mark.parametrize("digits", [0, -1, 18, 2.5, True, None, "3", math.nan])
def test_digits_must_be_an_integer_from_1_to_17(digits):
    with pytest.raises(ValueError, match=r"^digits must be an integer in \[1, 17\]"):
        u.fmt_rate(4.8e12, digits=digits)
    with pytest.raises(ValueError, match="^digits"):
        u.fmt_time(1e-3, digits=digits)


@pytest.mark.parametrize("unit", [0, None, True, ["B/s"], ""])
def test_unit_must_be_a_string(unit):
    # fmt_rate(4.8e12, unit=0) used to print '4.8 T0'
    with pytest.raises(ValueError, match="^unit must"):
        u.fmt_rate(4.8e12, unit=unit)


def test_bool_is_not_a_number_and_numpy_scalars_are():
    import numpy as np

    with pytest.raises(ValueError, match="^value must be a finite real number, got True"):
        u.fmt_bytes(True)
    assert u.fmt_bytes(np.int64(50 * u.MiB)) == "50 MiB"
    assert u.fmt_time(np.float32(0.0125)) == "12.5 ms"
    assert u.fmt_rate(-3.2e9) == "-3.2 GB/s"  # a difference of two rates keeps its sign
    assert u.fmt_rate(4.8e12, digits=1) == "5 TB/s"
