"""Kubernetes resource quantities ("4", "500m", "64Gi", "1e3") parsed exactly and formatted back.

Values are kept as `fractions.Fraction` so that sums of requests never drift; the snapshot converts them to
integer base units (milli-CPU, bytes, whole devices) once.
"""

from __future__ import annotations

import math
import re
from fractions import Fraction

GPU = "nvidia.com/gpu"
CPU = "cpu"
MEMORY = "memory"
PODS = "pods"

_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {
    "n": Fraction(1, 10**9),
    "u": Fraction(1, 10**6),
    "m": Fraction(1, 1000),
    "": Fraction(1),
    "k": Fraction(10**3),
    "M": Fraction(10**6),
    "G": Fraction(10**9),
    "T": Fraction(10**12),
    "P": Fraction(10**15),
    "E": Fraction(10**18),
}
# The Kubernetes quantity grammar: <signedNumber><suffix>, suffix = binarySI | decimalSI | decimalExponent.
_QUANTITY = re.compile(
    r"^(?P<sign>[+-]?)(?P<number>\d+(?:\.\d*)?|\.\d+)"
    r"(?:(?P<suffix>Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E)|[eE](?P<exponent>[+-]?\d+))?$",
    re.ASCII,  # "٣" and "５" are digits to Python, not to Kubernetes
)
_MAX_QUANTITY_LENGTH = 64  # far above any real amount; bounds the exact arithmetic below
_MAX_EXPONENT = 30  # larger exponents are never meaningful resource amounts and would make huge integers
_BYTE_RESOURCES_PREFIXES = ("memory", "ephemeral-storage", "hugepages-", "storage")


class QuantityError(ValueError):
    """A resource quantity that Kubernetes would reject. `.field` names where it came from."""

    def __init__(self, field: str, message: str) -> None:
        self.field = field
        self.message = message
        super().__init__(f"{field}: {message}" if field else message)


def parse_quantity(value: object, *, field: str = "") -> Fraction:
    """Return the exact value of a Kubernetes quantity (a string such as "500m" or "64Gi", or an int/float).

    Raises QuantityError naming `field` for anything else ("abc", "", booleans, negative numbers, NaN).
    """
    if isinstance(value, bool) or value is None:
        raise QuantityError(field, f"expected a quantity such as '4', '500m' or '64Gi', got {value!r}")
    if isinstance(value, int):
        result = Fraction(value)
    elif isinstance(value, float):
        if not math.isfinite(value):
            raise QuantityError(field, f"expected a finite quantity, got {value!r}")
        result = Fraction(value).limit_denominator(10**9)
    elif isinstance(value, str):
        if len(value) > _MAX_QUANTITY_LENGTH:
            raise QuantityError(field, f"a quantity of {len(value):,} characters is too long; use e.g. '4' or '64Gi'")
        match = _QUANTITY.match(value.strip())
        if not match:
            raise QuantityError(
                field, f"{value!r} is not a Kubernetes quantity; use e.g. '4', '500m', '64Gi' or '1e3'"
            )
        number = Fraction(match["number"])
        if match["exponent"] is not None:
            exponent = int(match["exponent"])
            if abs(exponent) > _MAX_EXPONENT:
                raise QuantityError(field, f"{value!r}: exponent {exponent} is out of range")
            number *= Fraction(10) ** exponent
        elif match["suffix"]:
            suffix = match["suffix"]
            number *= _BINARY.get(suffix) or _DECIMAL[suffix]
        result = -number if match["sign"] == "-" else number
    else:
        raise QuantityError(field, f"expected a quantity string or number, got {type(value).__name__}")
    if result < 0:
        raise QuantityError(field, f"{value!r} is negative; resource amounts must be >= 0")
    return result


def is_countable_resource(name: str) -> bool:
    """Return True for resources that only come in whole units (extended resources like GPUs, and `pods`)."""
    if name == PODS:
        return True
    if name in (CPU, MEMORY) or name.startswith(_BYTE_RESOURCES_PREFIXES):
        return False
    return "/" in name and not name.startswith("kubernetes.io/")


def parse_resource(name: str, value: object, *, field: str = "") -> Fraction:
    """Return the exact amount of resource `name`; whole devices for GPUs and other extended resources.

    Raises QuantityError when the quantity is malformed, or when a countable resource (nvidia.com/gpu, pods) is
    given a suffix or a fraction ("4Gi" GPUs, "0.5" GPUs).
    """
    field = field or name
    amount = parse_quantity(value, field=field)
    if is_countable_resource(name):
        has_suffix = isinstance(value, str) and re.search(r"(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE])$", value.strip())
        if has_suffix or amount.denominator != 1:
            raise QuantityError(field, f"{name} is counted in whole units; use a plain integer such as '4', "
                                       f"got {value!r}")
    return amount


def parse_resources(resources: object, *, field: str = "") -> dict[str, Fraction]:
    """Return {resource name: exact amount} for a `requests`/`limits`-style mapping.

    Raises QuantityError when `resources` is not a mapping or any value is malformed.
    """
    if resources is None:
        return {}
    if not isinstance(resources, dict):
        raise QuantityError(field, f"expected a mapping of resource name to quantity, got {type(resources).__name__}")
    parsed = {}
    for name, value in resources.items():
        if not isinstance(name, str) or not name:
            raise QuantityError(field, f"resource names must be non-empty strings, got {name!r}")
        parsed[name] = parse_resource(name, value, field=f"{field}.{name}" if field else name)
    return parsed


def format_quantity(amount: Fraction | int, *, resource: str = "") -> str:
    """Return the canonical string for `amount`: "4", "500m", "64Gi" (binary suffixes for byte resources)."""
    amount = Fraction(amount)
    if amount.denominator == 1:
        whole = amount.numerator
        if whole and resource.startswith(_BYTE_RESOURCES_PREFIXES):
            for suffix, factor in reversed(_BINARY.items()):
                if whole % factor == 0:
                    return f"{whole // factor}{suffix}"
        return str(whole)
    for suffix, factor in (("m", 1000), ("u", 10**6), ("n", 10**9)):
        scaled = amount * factor
        if scaled.denominator == 1:
            return f"{scaled.numerator}{suffix}"
    return f"{math.ceil(amount * 10**9)}n"  # Kubernetes rounds sub-nano amounts up


def to_base_units(name: str, amount: Fraction) -> int:
    """Return `amount` in the snapshot's integer unit: milli-CPU for cpu, else whole units (bytes, devices).

    Requests are rounded up (a pod asking for 0.5 bytes needs one), which is what the scheduler does.
    """
    if name == CPU:
        return math.ceil(amount * 1000)
    return math.ceil(amount)
