"""Kubernetes quantity parsing and formatting."""

from __future__ import annotations

from fractions import Fraction

import pytest

from trainer_portal.placement.quantities import (
    QuantityError,
    format_quantity,
    parse_quantity,
    parse_resource,
    parse_resources,
    to_base_units,
)


@pytest.mark.parametrize(("text", "value"), [
    ("4", 4),
    ("500m", Fraction(1, 2)),
    ("64Gi", 64 * 2**30),
    ("1e3", 1000),
    ("1E3", 1000),
    ("2k", 2000),
    ("1.5", Fraction(3, 2)),
    (".5", Fraction(1, 2)),
    ("+3", 3),
    ("100M", 10**8),
    ("1Ki", 1024),
    ("250u", Fraction(1, 4000)),
    ("7n", Fraction(7, 10**9)),
    ("2E", 2 * 10**18),
    (" 8 ", 8),
    (4, 4),
    (0.25, Fraction(1, 4)),
])
def test_it_parses_quantities(text, value):
    assert parse_quantity(text) == value


@pytest.mark.parametrize("text", ["abc", "", "4GB", "1e", "--1", "4 Gi", "Gi", "1.2.3", "-1", "1e99", None, True,
                                  float("nan"), [4]])
def test_it_rejects_malformed_quantities_naming_the_field(text):
    with pytest.raises(QuantityError) as error:
        parse_quantity(text, field="requests.memory")
    assert error.value.field == "requests.memory"
    assert "requests.memory" in str(error.value)


@pytest.mark.parametrize("text", ["4Gi", "0.5", "500m", "2k"])
def test_it_requires_whole_gpus(text):
    with pytest.raises(QuantityError, match="whole units"):
        parse_resource("nvidia.com/gpu", text)


def test_it_accepts_whole_gpus_and_fractional_cpu():
    assert parse_resource("nvidia.com/gpu", "8") == 8
    assert parse_resource("nvidia.com/gpu", 4) == 4
    assert parse_resource("cpu", "250m") == Fraction(1, 4)
    assert parse_resource("memory", "1.5Gi") == 3 * 2**29


def test_it_parses_resource_maps():
    assert parse_resources({"cpu": "2", "nvidia.com/gpu": 1}) == {"cpu": 2, "nvidia.com/gpu": 1}
    with pytest.raises(QuantityError, match="mapping"):
        parse_resources(["cpu"], field="requests")


@pytest.mark.parametrize(("amount", "resource", "text"), [
    (Fraction(400), "nvidia.com/gpu", "400"),
    (Fraction(1, 2), "cpu", "500m"),
    (Fraction(48), "cpu", "48"),
    (Fraction(192 * 2**30), "memory", "192Gi"),
    (Fraction(1000), "memory", "1000"),
    (Fraction(3 * 2**40), "memory", "3Ti"),
    (Fraction(1, 4000), "cpu", "250u"),
])
def test_it_formats_canonically(amount, resource, text):
    assert format_quantity(amount, resource=resource) == text
    assert parse_quantity(text) == amount


def test_base_units_are_milli_cpu_and_rounded_up():
    assert to_base_units("cpu", Fraction(1, 4)) == 250
    assert to_base_units("cpu", Fraction(1, 3000)) == 1
    assert to_base_units("memory", Fraction(1, 2)) == 1
