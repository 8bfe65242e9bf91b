"""openAPIV3Schema handling for custom resources: defaulting, pruning and validation (with a CEL subset).

The apiserver order is kept: prune unknown fields → apply `default`s → validate. Validation returns
`metav1.StatusCause`-shaped dicts (`reason`, `message`, `field`) with the apiserver's wording, e.g.
`spec.trainer.numNodes: Invalid value: -1: spec.trainer.numNodes in body should be greater than or equal to 0`.

CEL: `x-kubernetes-validations` rules (`rule`, `messageExpression`, `fieldPath`, `reason`, transition rules with
`oldSelf`) are evaluated by a CEL interpreter (`cel.py`, cel-python); a rule that does not compile is skipped and
reported through `unknown_rules`.
"""

from __future__ import annotations

import copy
import json
import re
from functools import lru_cache
from typing import Any

from sandbox.apiserver import cel

Cause = dict[str, str]
_MISSING = object()

# Rules that need the old value (transition rules) only run on update, like in the apiserver.
_TRANSITION_MARK = "oldSelf"

# Rule texts that did not compile (kube-apiserver refuses such a CRD; the sandbox skips the rule and lists it here).
unknown_rules: set[str] = set()


def _fmt(value: Any) -> str:
    """Returns a value as the apiserver prints it in `Invalid value: ...` messages."""
    if isinstance(value, dict):
        return '"object"'
    if isinstance(value, list):
        return '"array"' if value and isinstance(value[0], dict | list) else json.dumps(value)
    return json.dumps(value)


def _whole(value: Any) -> bool:
    """Returns whether value is a JSON float with an integral value (`8.0`), which the apiserver treats as integer."""
    return isinstance(value, float) and value.is_integer()


def _type_ok(schema: dict[str, Any], value: Any) -> bool:
    if schema.get("x-kubernetes-int-or-string"):
        return (isinstance(value, int | str) and not isinstance(value, bool)) or _whole(value)
    typ = schema.get("type")
    if typ is None:
        return True
    return {
        "object": lambda v: isinstance(v, dict),
        "array": lambda v: isinstance(v, list),
        "string": lambda v: isinstance(v, str),
        "integer": lambda v: (isinstance(v, int) and not isinstance(v, bool)) or _whole(v),
        "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
        "boolean": lambda v: isinstance(v, bool),
    }.get(typ, lambda v: True)(value)


def _expected_type(schema: dict[str, Any]) -> str:
    return "integer,string" if schema.get("x-kubernetes-int-or-string") else str(schema.get("type"))


def _type_name(value: Any) -> str:
    if _whole(value):
        return "integer"
    return {dict: "object", list: "array", str: "string", bool: "boolean", int: "integer", float: "number"}.get(
        type(value), "null")


_MAX_EXACT_FLOAT = 1e21  # Go prints larger float64 values with an exponent, so they stay floats


def normalize_numbers(obj: Any) -> Any:
    """Returns obj with whole-number floats (`8.0`, `1e3`) turned into ints, in place for dicts and lists.

    kube-apiserver decodes JSON numbers of custom resources into int64 when they are integral and stores them that
    way, so a client that sends `8.0` reads back `8`.
    """
    if isinstance(obj, dict):
        for key, value in obj.items():
            if _whole(value) and abs(value) < _MAX_EXACT_FLOAT:
                obj[key] = int(value)
            else:
                normalize_numbers(value)
    elif isinstance(obj, list):
        for i, value in enumerate(obj):
            if _whole(value) and abs(value) < _MAX_EXACT_FLOAT:
                obj[i] = int(value)
            else:
                normalize_numbers(value)
    return obj


# -- pruning and defaulting ------------------------------------------------------------------------------------
def prune(schema: dict[str, Any], obj: Any, root: bool = True, removed: list[str] | None = None,
          path: str = "") -> Any:
    """Returns obj with fields unknown to the structural schema removed (in place for dicts/lists).

    `apiVersion`, `kind` and `metadata` are kept at the root and in `x-kubernetes-embedded-resource` objects.
    Null values of non-nullable fields are dropped, like the apiserver does. The dotted paths of unknown fields
    are appended to `removed` (for fieldValidation=Strict/Warn).
    """
    if isinstance(obj, dict):
        if schema.get("x-kubernetes-preserve-unknown-fields") and not schema.get("properties"):
            return obj
        props = schema.get("properties") or {}
        extra = schema.get("additionalProperties")
        keep_meta = root or schema.get("x-kubernetes-embedded-resource")
        for name in list(obj):
            value = obj[name]
            if keep_meta and name in ("apiVersion", "kind", "metadata"):
                continue  # ObjectMeta is validated by the apiserver itself, never pruned by the CRD schema
            sub = props.get(name)
            if sub is None and isinstance(extra, dict):
                sub = extra
            if sub is None:
                if schema.get("x-kubernetes-preserve-unknown-fields") or extra is True:
                    continue
                del obj[name]
                if removed is not None:
                    removed.append(_join(path, name))
                continue
            if value is None and not sub.get("nullable"):
                del obj[name]
                continue
            prune(sub, value, False, removed, _join(path, name))
    elif isinstance(obj, list):
        items = schema.get("items")
        if isinstance(items, dict):
            for i, value in enumerate(obj):
                prune(items, value, False, removed, f"{path}[{i}]")
    return obj


def apply_defaults(schema: dict[str, Any], obj: Any) -> Any:
    """Returns obj with schema `default`s filled in for absent properties (in place)."""
    if isinstance(obj, dict):
        for name, sub in (schema.get("properties") or {}).items():
            if name not in obj and "default" in sub:
                obj[name] = copy.deepcopy(sub["default"])
            if name in obj:
                apply_defaults(sub, obj[name])
        extra = schema.get("additionalProperties")
        if isinstance(extra, dict):
            for name, value in obj.items():
                if name not in (schema.get("properties") or {}):
                    apply_defaults(extra, value)
    elif isinstance(obj, list) and isinstance(schema.get("items"), dict):
        for value in obj:
            apply_defaults(schema["items"], value)
    return obj


# -- validation ------------------------------------------------------------------------------------------------
def validate(schema: dict[str, Any], obj: dict[str, Any], old: dict[str, Any] | None = None,
             skip_status: bool = False) -> list[Cause]:
    """Returns the validation causes (empty when valid) of a custom resource against its openAPIV3Schema.

    `old` enables transition rules (`oldSelf`); `skip_status` leaves out `.status` (unchanged by main writes).
    """
    causes: list[Cause] = []
    _validate(schema, obj, old if old is not None else _MISSING, "", causes, root=True, skip_status=skip_status)
    return causes


def _cause(reason: str, field: str, message: str) -> Cause:
    return {"reason": reason, "message": message, "field": field}


def _join(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def _validate(schema: dict[str, Any], value: Any, old: Any, path: str, causes: list[Cause], root: bool = False,
              skip_status: bool = False) -> None:
    if not _type_ok(schema, value):
        found = _type_name(value)
        causes.append(_cause("FieldValueTypeInvalid", path,
                             f"Invalid value: \"{found}\": {path or '<root>'} in body must be of type "
                             f"{_expected_type(schema)}: \"{found}\""))
        return
    if "enum" in schema and value not in schema["enum"]:
        supported = ", ".join(_quoted(v) for v in schema["enum"])
        causes.append(_cause("FieldValueNotSupported", path,
                             f"Unsupported value: {_fmt(value)}: supported values: {supported}"))
    _validate_combinators(schema, value, path, causes)
    if isinstance(value, bool):
        pass
    elif isinstance(value, int | float):
        _validate_number(schema, value, path, causes)
    elif isinstance(value, str):
        _validate_string(schema, value, path, causes)
    elif isinstance(value, list):
        _validate_list(schema, value, old, path, causes)
    elif isinstance(value, dict):
        _validate_object(schema, value, old, path, causes, root, skip_status)
    # CEL rules run beside the structural checks, as the apiserver's CEL validator does.
    _validate_rules(schema, value, old, path, causes)


def _quoted(value: Any) -> str:
    return json.dumps(value if isinstance(value, str) else json.dumps(value))


def _validate_combinators(schema: dict[str, Any], value: Any, path: str, causes: list[Cause]) -> None:
    """Checks anyOf/allOf/oneOf/not, which structural schemas allow for value validation (never for types, except
    the `anyOf: [{type: integer}, {type: string}]` of int-or-string fields, which the type check covers)."""
    where = json.dumps(path or "<root>")

    def failures(sub: dict[str, Any]) -> list[Cause]:
        out: list[Cause] = []
        _validate(sub, value, _MISSING, path, out)
        return out

    if schema.get("x-kubernetes-int-or-string") and _int_or_string_any_of(schema.get("anyOf")):
        pass
    elif isinstance(schema.get("anyOf"), list) and schema["anyOf"]:
        results = [failures(sub) for sub in schema["anyOf"]]
        if all(results):
            causes.append(_cause("FieldValueInvalid", path, f'Invalid value: "": {where} must validate at least one '
                                                            f"schema (anyOf)"))
            causes.extend(results[0])
    if isinstance(schema.get("oneOf"), list) and schema["oneOf"]:
        passing = sum(1 for sub in schema["oneOf"] if not failures(sub))
        if passing != 1:
            causes.append(_cause("FieldValueInvalid", path, f'Invalid value: "": {where} must validate one and only '
                                                            f"one schema (oneOf). Found {passing} valid alternatives"))
    for sub in schema.get("allOf") or ():
        found = failures(sub)
        if found:
            causes.append(_cause("FieldValueInvalid", path, f'Invalid value: "": {where} must validate all the '
                                                            f"schemas (allOf)"))
            causes.extend(found)
            break
    if isinstance(schema.get("not"), dict) and not failures(schema["not"]):
        causes.append(_cause("FieldValueInvalid", path, f'Invalid value: "": {where} must not validate the schema '
                                                        f"(not)"))


def _int_or_string_any_of(alternatives: Any) -> bool:
    return (isinstance(alternatives, list)
            and sorted(str(a.get("type")) for a in alternatives if isinstance(a, dict)) == ["integer", "string"])


def _validate_number(schema: dict[str, Any], value: float, path: str, causes: list[Cause]) -> None:
    low, high = schema.get("minimum"), schema.get("maximum")
    if low is not None:
        if schema.get("exclusiveMinimum") and value <= low:
            causes.append(_cause("FieldValueInvalid", path,
                                 f"Invalid value: {_fmt(value)}: {path} in body should be greater than {low}"))
        elif value < low:
            causes.append(_cause("FieldValueInvalid", path, f"Invalid value: {_fmt(value)}: {path} in body should "
                                                            f"be greater than or equal to {low}"))
    if high is not None:
        if schema.get("exclusiveMaximum") and value >= high:
            causes.append(_cause("FieldValueInvalid", path,
                                 f"Invalid value: {_fmt(value)}: {path} in body should be less than {high}"))
        elif value > high:
            causes.append(_cause("FieldValueInvalid", path,
                                 f"Invalid value: {_fmt(value)}: {path} in body should be less than or equal to "
                                 f"{high}"))


@lru_cache(maxsize=512)
def _regex(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern)


def _validate_string(schema: dict[str, Any], value: str, path: str, causes: list[Cause]) -> None:
    if "maxLength" in schema and len(value) > schema["maxLength"]:
        causes.append(_cause("FieldValueTooLong", path, f"Too long: may not be more than {schema['maxLength']} bytes"))
    if "minLength" in schema and len(value) < schema["minLength"]:
        causes.append(_cause("FieldValueInvalid", path, f"Invalid value: {_fmt(value)}: {path} in body should be at "
                                                        f"least {schema['minLength']} chars long"))
    if "pattern" in schema and not _regex(schema["pattern"]).search(value):
        causes.append(_cause("FieldValueInvalid", path, f"Invalid value: {_fmt(value)}: {path} in body should match "
                                                        f"'{schema['pattern']}'"))


def _item_key(item: Any, keys: list[str]) -> Any:
    return tuple(item.get(k) for k in keys) if isinstance(item, dict) else None


def _validate_list(schema: dict[str, Any], value: list[Any], old: Any, path: str, causes: list[Cause]) -> None:
    if "maxItems" in schema and len(value) > schema["maxItems"]:
        causes.append(_cause("FieldValueTooMany", path,
                             f"Too many: {len(value)}: must have at most {schema['maxItems']} items"))
    if "minItems" in schema and len(value) < schema["minItems"]:
        causes.append(_cause("FieldValueInvalid", path, f"Invalid value: {len(value)}: {path} in body should have at "
                                                        f"least {schema['minItems']} items"))
    list_type = schema.get("x-kubernetes-list-type")
    keys = schema.get("x-kubernetes-list-map-keys") or []
    old_by_key: dict[Any, Any] = {}
    if list_type == "set":
        seen: list[Any] = []
        for i, item in enumerate(value):
            if item in seen:
                causes.append(_cause("FieldValueDuplicate", f"{path}[{i}]", f"Duplicate value: {_fmt(item)}"))
            seen.append(item)
    elif list_type == "map" and keys:
        seen_keys: set[Any] = set()
        for i, item in enumerate(value):
            k = _item_key(item, keys)
            if k in seen_keys:
                shown = ", ".join(f'"{n}":{json.dumps(v)}' for n, v in zip(keys, k, strict=False))
                causes.append(_cause("FieldValueDuplicate", f"{path}[{i}]", f"Duplicate value: {{{shown}}}"))
            seen_keys.add(k)
        if isinstance(old, list):
            old_by_key = {_item_key(item, keys): item for item in old}
    items = schema.get("items")
    if isinstance(items, dict):
        for i, item in enumerate(value):
            old_item = old_by_key.get(_item_key(item, keys), _MISSING) if old_by_key else _MISSING
            _validate(items, item, old_item, f"{path}[{i}]", causes)


def _validate_object(schema: dict[str, Any], value: dict[str, Any], old: Any, path: str, causes: list[Cause],
                     root: bool, skip_status: bool) -> None:
    props = schema.get("properties") or {}
    for name in schema.get("required") or ():
        if name not in value or value[name] is None:
            causes.append(_cause("FieldValueRequired", _join(path, name), "Required value"))
    n = len(value)
    if "maxProperties" in schema and n > schema["maxProperties"]:
        causes.append(_cause("FieldValueTooMany", path,
                             f"Too many: {n}: must have at most {schema['maxProperties']} items"))
    if "minProperties" in schema and n < schema["minProperties"]:
        causes.append(_cause("FieldValueInvalid", path or "<root>", f"Invalid value: {n}: {path or '<root>'} in body "
                                                                    f"should have at least "
                                                                    f"{schema['minProperties']} properties"))
    extra = schema.get("additionalProperties")
    for name, sub_value in value.items():
        if root and name in ("apiVersion", "kind", "metadata"):
            continue
        if root and skip_status and name == "status":
            continue
        sub = props.get(name)
        if sub is None and isinstance(extra, dict):
            sub = extra
        if sub is None or sub_value is None:
            continue
        sub_old = old.get(name, _MISSING) if isinstance(old, dict) else _MISSING
        _validate(sub, sub_value, sub_old, _join(path, name), causes)


def _validate_rules(schema: dict[str, Any], value: Any, old: Any, path: str, causes: list[Cause]) -> None:
    for rule in schema.get("x-kubernetes-validations") or ():
        text = rule.get("rule", "")
        if not isinstance(text, str) or not cel.compiles(text):
            unknown_rules.add(str(text))
            continue
        transition = _TRANSITION_MARK in text
        if transition and (old is _MISSING or rule.get("optionalOldSelf")):
            continue
        if cel.holds(text, value, None if old is _MISSING else old, with_old=transition):
            continue
        field = path
        if rule.get("fieldPath"):
            field = path + rule["fieldPath"] if rule["fieldPath"].startswith(".") else rule["fieldPath"]
        expression = rule.get("messageExpression")
        message = (cel.message(expression, value) if isinstance(expression, str) and expression else None) \
            or rule.get("message") or f"failed rule: {text}"
        causes.append(_cause(rule.get("reason", "FieldValueInvalid"), field or "<root>",
                             f"Invalid value: \"{_type_name(value)}\": {message}"))
