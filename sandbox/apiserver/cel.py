"""CRD `x-kubernetes-validations` rules evaluated by a CEL interpreter (cel-python), as kube-apiserver does.

`evaluate(rule, self, oldSelf)` compiles a rule once (cached by its text) and runs it with `self` (and `oldSelf`
for transition rules) bound to the JSON value. The Kubernetes CEL libraries the shipped CRDs use beyond standard
CEL are provided as functions: `sets.intersects(a, b)` (the `sets` extension) and `list.join(separator)` (the
`strings` extension). A rule that does not compile raises `RuleError` (kube-apiserver refuses such a CRD); a
runtime error (e.g. a missing field without `has()`) makes the rule fail, as it does in kube-apiserver.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import celpy
from celpy import celtypes


class RuleError(ValueError):
    """The rule (or messageExpression) is not valid CEL; the message says where."""


def _intersects(_sets: Any, first: Any, second: Any) -> celtypes.BoolType:
    """sets.intersects(a, b): whether the lists share an element."""
    return celtypes.BoolType(any(item in second for item in first))


def _join(items: Any, separator: Any = "") -> celtypes.StringType:
    """list.join(separator) of the strings extension."""
    return celtypes.StringType(str(separator).join(str(item) for item in items))


_FUNCTIONS = {"intersects": _intersects, "join": _join}
# `sets` is a namespace in Kubernetes CEL; bound as a value so that `sets.intersects(a, b)` reaches `_intersects`.
_SETS = celtypes.MapType({})
_ENVIRONMENT = celpy.Environment()


@lru_cache(maxsize=1024)
def _program(text: str) -> Any:
    try:
        return _ENVIRONMENT.program(_ENVIRONMENT.compile(text), functions=_FUNCTIONS)
    except celpy.CELParseError as error:
        raise RuleError(f"compilation failed: {error}") from None


def compiles(text: str) -> bool:
    """Return whether `text` is a CEL expression the interpreter can run."""
    try:
        _program(text)
    except RuleError:
        return False
    return True


def evaluate(text: str, self_value: Any, old_value: Any = None, *, with_old: bool = False) -> Any:
    """Return the value of the CEL expression `text` with `self` (and `oldSelf` when `with_old`) bound.

    Returns a Python value (bool, str, int, …), or a `celpy.CELEvalError` instance for a runtime error. Raises
    RuleError when `text` does not compile.
    """
    program = _program(text)
    activation: dict[str, Any] = {"self": celpy.json_to_cel(self_value), "sets": _SETS}
    if with_old:
        activation["oldSelf"] = celpy.json_to_cel(old_value)
    try:
        return program.evaluate(activation)
    except celpy.CELEvalError as error:
        return error
    except (TypeError, KeyError, ValueError, AttributeError) as error:  # the interpreter's own runtime failures
        return celpy.CELEvalError(str(error))


def holds(text: str, self_value: Any, old_value: Any = None, *, with_old: bool = False) -> bool:
    """Return True when the rule `text` evaluates to true (a runtime error or a non-boolean fails it)."""
    result = evaluate(text, self_value, old_value, with_old=with_old)
    return isinstance(result, bool | celtypes.BoolType) and bool(result)


def message(text: str, self_value: Any) -> str | None:
    """Return the string a messageExpression evaluates to, or None (error, non-string or empty)."""
    try:
        result = evaluate(text, self_value)
    except RuleError:
        return None
    return str(result) if isinstance(result, str) and result else None
