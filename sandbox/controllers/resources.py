"""Resource quantities for the simulated scheduler: parse Kubernetes quantity strings, sum pod requests.

All amounts are integers in milli-units (cpu "500m" -> 500, memory "1Ki" -> 1_024_000, "nvidia.com/gpu" "4" -> 4000)
so that comparisons are exact and never depend on float rounding.
"""

from __future__ import annotations

import functools
import re
from decimal import ROUND_CEILING, Decimal, InvalidOperation

_SUFFIXES = {
    "": 1, "m": Decimal("0.001"), "k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12, "P": 10**15, "E": 10**18,
    "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60,
}
_QUANTITY = re.compile(r"^([+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)([a-zA-Z]*)$")

# The resources the scheduler accounts for; every pod also consumes one "pods" slot.
TRACKED = ("nvidia.com/gpu", "cpu", "memory", "pods")


def parse_quantity(value: str | int | float) -> int:
    """Return `value` (a Kubernetes quantity such as "500m", "64Gi", "8", 4) in milli-units, rounded up.

    Raises ValueError naming the value when it is not a valid quantity.
    """
    if isinstance(value, bool):
        raise ValueError(f"invalid quantity {value!r}: expected a string such as '4', '500m' or '64Gi'")
    if isinstance(value, int | float):
        value = str(value)
    if not isinstance(value, str):
        raise ValueError(f"invalid quantity {value!r}: expected a string such as '4', '500m' or '64Gi'")
    return _parse_text(value)


@functools.lru_cache(maxsize=4096)
def _parse_text(value: str) -> int:
    """Cached parse: clusters repeat a handful of quantity strings millions of times."""
    match = _QUANTITY.match(value.strip())
    if not match or match.group(2) not in _SUFFIXES:
        raise ValueError(f"invalid quantity {value!r}: expected a string such as '4', '500m' or '64Gi'")
    try:
        amount = Decimal(match.group(1)) * Decimal(_SUFFIXES[match.group(2)]) * 1000
    except InvalidOperation:
        raise ValueError(f"invalid quantity {value!r}: expected a string such as '4', '500m' or '64Gi'")
    return int(amount.to_integral_value(rounding=ROUND_CEILING))


def _container_requests(container: dict) -> dict[str, int]:
    """Requests of one container; a limit without a request counts as the request (the API server defaults it)."""
    resources = container.get("resources") or {}
    merged = dict(resources.get("limits") or {})
    merged.update(resources.get("requests") or {})
    return {name: parse_quantity(q) for name, q in merged.items()}


def pod_requests(pod: dict) -> dict[str, int]:
    """Return the effective requests of `pod` in milli-units, including one "pods" slot.

    Effective = max(sum over containers, max over init containers) per resource, as kube-scheduler computes it.
    Raises ValueError when a quantity is malformed.
    """
    spec = pod.get("spec") or {}
    total: dict[str, int] = {}
    for container in spec.get("containers") or []:
        for name, amount in _container_requests(container).items():
            total[name] = total.get(name, 0) + amount
    for container in spec.get("initContainers") or []:
        for name, amount in _container_requests(container).items():
            total[name] = max(total.get(name, 0), amount)
    total["pods"] = 1000
    return total


def node_allocatable(node: dict) -> dict[str, int]:
    """Return the node's status.allocatable (falling back to capacity) in milli-units; malformed entries count 0."""
    status = node.get("status") or {}
    raw = status.get("allocatable") or status.get("capacity") or {}
    result = {}
    for name, quantity in raw.items():
        try:
            result[name] = parse_quantity(quantity)
        except ValueError:
            result[name] = 0
    return result
