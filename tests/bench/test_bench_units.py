"""Seconds and bytes as text: the one formatter the CLI, report, compare and plots share."""

from __future__ import annotations

import math

import numpy as np
import pytest

from xlinalg._lib._units import format_bytes, format_time, round_outward


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (2.0, "2 s"),
        (0.0123, "12.3 ms"),
        (1.5e-5, "15 µs"),
        (2.5e-7, "250 ns"),
        (0.9997, "1000 ms"),  # whole units from 100 up: never "1e+03 ms"
        (123.4, "123 s"),
        (0.0, "0 ns"),
        (np.float32(1e-3), "1 ms"),
    ],
)
def test_format_time(seconds, text) -> None:
    assert format_time(seconds) == text


@pytest.mark.parametrize(("n", "text"), [(512, "512 B"), (1536, "1.5 KiB"), (3 * 2**20, "3.0 MiB"), (2**50, "1024.0 TiB")])
def test_format_bytes(n, text) -> None:
    assert format_bytes(n) == text


@pytest.mark.parametrize("value", [None, "1", True])
def test_not_a_number_is_the_missing_mark(value) -> None:
    assert format_time(value) == "-"
    assert format_time(value, missing="?") == "?"
    assert format_bytes(value, missing="?") == "?"


def test_round_outward_rounds_each_end_away_from_the_inside():
    assert round_outward(1.0496, 2, up=False) == 1.04
    assert round_outward(1.1201, 2, up=True) == 1.13
    assert round_outward(1.15, 2, up=False) == 1.15  # binary 1.1499..: an exact end stays
    assert round_outward(1234.5, -1, up=True) == 1240
    for x in (0.0, -1.0, float("inf"), float("nan"), 5e-324):
        got = round_outward(x, 2 if x != 5e-324 else 325, up=False)
        assert got == x or (math.isnan(got) and math.isnan(x))  # returned as it is
