"""Safe parsing and serialisation of ClusterTrainingRuntime manifests (YAML, multi-document, or JSON).

The loader accepts only plain data: mappings with unique string keys, sequences and scalars. Anchors and aliases
are refused outright (they are how "billion laughs" alias bombs work, and no Kubernetes manifest needs them), as
are explicit tags (`!!python/object`, `!!binary`, `!foo`). Plain scalars resolve as kubectl's go-yaml reads them
(`y`/`on` are booleans, `1e3` a float), except that timestamps and sexagesimal numbers stay strings, so a value
such as `8080:80` or `2026-01-01` is never silently turned into an int or a datetime. Size, depth and value-count
limits bound the CPU a hostile document can cost; libyaml does the parsing when available.

The dumper writes block-style YAML that reads back equal here and in kubectl: key order kept, no anchors, every
string another reader could take for a non-string quoted.
"""

from __future__ import annotations

import copy
import json
import re
from dataclasses import dataclass, field
from typing import Any

import yaml
from yaml.constructor import ConstructorError
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from .constants import ANCESTOR_LABEL, API_VERSION, FRAMEWORK_LABEL, KIND

__all__ = [
    "API_VERSION",
    "KIND",
    "MAX_DEPTH",
    "MAX_MANIFEST_BYTES",
    "MAX_NODES",
    "ManifestError",
    "dump_many",
    "dump_yaml",
    "load_documents",
    "load_runtime",
    "load_runtimes",
    "new_runtime",
    "single_node_template",
    "strip_server_fields",
]

MAX_MANIFEST_BYTES = 1024 * 1024
MAX_INTEGER_DIGITS = 100
# Real manifests nest ~20 levels deep; this bound keeps recursive code (ours and PyYAML's) far from the stack limit.
MAX_DEPTH = 100
# A runtime has a few hundred nodes; 1 MiB of real manifests stays far below this. Pathological input ("- 1" × 250k)
# is cut off early instead of costing seconds of CPU per request.
MAX_NODES = 100_000
# Errors in input up to this size are re-parsed by the pure-Python parser for its clearer messages.
REPARSE_LIMIT = 64 * 1024
LAST_APPLIED_ANNOTATION = "kubectl.kubernetes.io/last-applied-configuration"
SERVER_METADATA_FIELDS = (
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "managedFields",
    "selfLink",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
)


class ManifestError(ValueError):
    """A manifest could not be parsed or is not what was expected.

    Attributes: `message`, `line` and `column` (1-based, or None), `document` (0-based index, or None) and `path`
    (dotted field path, or None). `str()` gives "line 3, column 5: message".
    """

    def __init__(
        self,
        message: str,
        *,
        line: int | None = None,
        column: int | None = None,
        document: int | None = None,
        path: str | None = None,
    ) -> None:
        self.message = message
        self.line = line
        self.column = column
        self.document = document
        self.path = path
        super().__init__(str(self))

    def __str__(self) -> str:
        if self.line is not None:
            where = f"line {self.line}" + (f", column {self.column}" if self.column is not None else "")
            return f"{where}: {self.message}"
        if self.document is not None:
            return f"document {self.document + 1}: {self.message}"
        return self.message

    def as_dict(self) -> dict[str, Any]:
        """Return the error as a JSON-ready dict (message, line, column, document, path)."""
        return {
            "message": self.message,
            "line": self.line,
            "column": self.column,
            "document": self.document,
            "path": self.path,
        }


# --------------------------------------------------------------------------------------------------- loading


class _PlainResolver(yaml.resolver.BaseResolver):
    """Plain-scalar resolution as kubectl's go-yaml (YAML 1.1) does it: `y`/`n`/`on`/`off` are booleans, `1e3` is a
    float, `0o17` and `010` are octal; unlike PyYAML's default, timestamps, sexagesimals and `<<` stay strings."""


_PlainResolver.yaml_implicit_resolvers = {}
_PlainResolver.add_implicit_resolver(
    "tag:yaml.org,2002:bool",
    re.compile(r"^(?:y|Y|yes|Yes|YES|n|N|no|No|NO|true|True|TRUE|false|False|FALSE|on|On|ON|off|Off|OFF)$"),
    list("yYnNtTfFoO"),
)
_PlainResolver.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(
        r"""^(?:[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+]?[0-9]+)?
        |[-+]?(?:[0-9][0-9_]*)(?:[eE][-+]?[0-9]+)
        |[-+]?\.[0-9][0-9_]*(?:[eE][-+]?[0-9]+)?
        |[-+]?\.(?:inf|Inf|INF)
        |\.(?:nan|NaN|NAN))$""",
        re.X,
    ),
    list("-+0123456789."),
)
_PlainResolver.add_implicit_resolver(
    "tag:yaml.org,2002:int",
    re.compile(
        r"""^(?:[-+]?0b[0-1_]+
        |[-+]?0o[0-7_]+
        |[-+]?0[0-7_]+
        |[-+]?(?:0|[1-9][0-9_]*)
        |[-+]?0x[0-9a-fA-F_]+)$""",
        re.X,
    ),
    list("-+0123456789"),
)
_PlainResolver.add_implicit_resolver(
    "tag:yaml.org,2002:null", re.compile(r"^(?:~|null|Null|NULL|)$"), ["~", "n", "N", ""]
)


def _mark_position(mark: Any) -> tuple[int | None, int | None]:
    if mark is None:
        return None, None
    return mark.line + 1, mark.column + 1


class _SafeComposerMixin:
    """Rejects anchors, aliases, explicit tags and excessive nesting while composing the node graph."""

    _depth = 0
    _nodes = 0

    def compose_node(self, parent: Node | None, index: Any) -> Node:  # type: ignore[override]
        event = self.peek_event()  # type: ignore[attr-defined]
        line, column = _mark_position(event.start_mark)
        self._nodes += 1
        if self._nodes > MAX_NODES:
            raise ManifestError(
                f"input has more than {MAX_NODES} values; a ClusterTrainingRuntime has a few hundred — split the "
                "input or remove generated content",
                line=line,
                column=column,
            )
        if isinstance(event, yaml.AliasEvent):
            raise ManifestError(
                f"YAML alias '*{event.anchor}' is not allowed; write the value out in full", line=line, column=column
            )
        anchor = getattr(event, "anchor", None)
        if anchor is not None:
            raise ManifestError(
                f"YAML anchor '&{anchor}' is not allowed (anchors and aliases can expand into huge documents); "
                "remove it and write values out in full",
                line=line,
                column=column,
            )
        tag = getattr(event, "tag", None)
        if tag is not None:
            raise ManifestError(
                f"YAML tag '{tag}' is not allowed; remove it (manifests contain only plain strings, numbers, "
                "booleans, lists and mappings)",
                line=line,
                column=column,
            )
        self._depth += 1
        try:
            if self._depth > MAX_DEPTH:
                raise ManifestError(f"document is nested deeper than {MAX_DEPTH} levels", line=line, column=column)
            return super().compose_node(parent, index)  # type: ignore[misc]
        finally:
            self._depth -= 1


class _SafeConstructor(yaml.constructor.SafeConstructor):
    """Builds plain dicts; refuses duplicate and non-string keys with the key's position."""

    bool_values = {**yaml.constructor.SafeConstructor.bool_values, "y": True, "n": False}

    def construct_mapping(self, node: Node, deep: bool = False) -> dict[str, Any]:  # type: ignore[override]
        if not isinstance(node, MappingNode):
            raise ConstructorError(None, None, f"expected a mapping node, but found {node.id}", node.start_mark)
        mapping: dict[str, Any] = {}
        for key_node, value_node in node.value:
            key = self.construct_object(key_node, deep=True)
            line, column = _mark_position(key_node.start_mark)
            if not isinstance(key, str):
                written = key_node.value if isinstance(key_node, ScalarNode) else key
                raise ManifestError(
                    f"mapping key {written!r} is read as {kind_of(key)}, not a string; quote it (\"{written}\")",
                    line=line,
                    column=column,
                )
            if key in mapping:
                raise ManifestError(
                    f"duplicate key '{key}' in the same mapping; keep only one of them", line=line, column=column
                )
            mapping[key] = self.construct_object(value_node, deep=True)
        return mapping


    def construct_yaml_int(self, node: Node) -> int:
        # Python refuses to convert integers of more than 4,300 digits (a ValueError, not a YAML error); no field of
        # a runtime needs more than an int64's 19.
        digits = sum(character.isdigit() for character in str(node.value))
        if digits > MAX_INTEGER_DIGITS:
            line, column = _mark_position(node.start_mark)
            raise ManifestError(
                f"a number of {digits:,} digits is too long; numbers here have at most {MAX_INTEGER_DIGITS} digits "
                "(quote it if it is text)",
                line=line,
                column=column,
            )
        return super().construct_yaml_int(node)


_SafeConstructor.add_constructor("tag:yaml.org,2002:map", _SafeConstructor.construct_yaml_map)
_SafeConstructor.add_constructor("tag:yaml.org,2002:int", _SafeConstructor.construct_yaml_int)


class _SafeLoader(
    yaml.reader.Reader,
    yaml.scanner.Scanner,
    yaml.parser.Parser,
    _SafeComposerMixin,
    yaml.composer.Composer,
    _SafeConstructor,
    _PlainResolver,
):
    def __init__(self, stream: str) -> None:
        yaml.reader.Reader.__init__(self, stream)
        yaml.scanner.Scanner.__init__(self)
        yaml.parser.Parser.__init__(self)
        yaml.composer.Composer.__init__(self)
        _SafeConstructor.__init__(self)
        _PlainResolver.__init__(self)


try:
    from yaml.cyaml import CParser
except ImportError:  # pragma: no cover - PyYAML built without libyaml
    CParser = None

if CParser is not None:

    class _FastLoader(_SafeComposerMixin, yaml.composer.Composer, _SafeConstructor, _PlainResolver, CParser):
        """libyaml scans and parses (≈ 10× faster); composing and constructing stay in Python with our checks."""

        def __init__(self, stream: str) -> None:
            CParser.__init__(self, stream)
            yaml.composer.Composer.__init__(self)
            _SafeConstructor.__init__(self)
            _PlainResolver.__init__(self)

else:  # pragma: no cover - PyYAML built without libyaml
    _FastLoader = _SafeLoader  # type: ignore[misc]


def _decode(text: str | bytes) -> str:
    if isinstance(text, bytes):
        if len(text) > MAX_MANIFEST_BYTES:
            raise ManifestError(_too_large(len(text)))
        try:
            return text.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise ManifestError(f"input is not valid UTF-8 (byte offset {exc.start}); save the file as UTF-8")
    if not isinstance(text, str):
        raise ManifestError(f"expected YAML or JSON text, got {type(text).__name__}")
    size = len(text.encode("utf-8", errors="surrogatepass"))
    if size > MAX_MANIFEST_BYTES:
        raise ManifestError(_too_large(size))
    return text.removeprefix("\ufeff")


def _too_large(size: int) -> str:
    return f"input is {size} bytes; the limit is {MAX_MANIFEST_BYTES} bytes (1 MiB) — split it into smaller files"


def _yaml_documents(text: str) -> list[tuple[dict, _Where]]:
    try:
        return _compose_documents(_FastLoader, text)
    except ManifestError:
        if _FastLoader is _SafeLoader or len(text) > REPARSE_LIMIT:
            raise
        # Re-read small input with the pure-Python parser: its messages (e.g. about tabs) are the clearer ones.
        return _compose_documents(_SafeLoader, text)


def _position(text: str, offset: int) -> tuple[int, int]:
    """Return the 1-based (line, column) of character `offset` in `text`."""
    return text.count("\n", 0, offset) + 1, offset - text.rfind("\n", 0, offset)


@dataclass
class _Where:
    """Where a document (or a List item) sits in the input: stream index, start, and its top-level keys' values."""

    index: int
    line: int | None = None
    column: int | None = None
    keys: dict[str, tuple[int, int]] = field(default_factory=dict)
    items: list[_Where] = field(default_factory=list)

    def of(self, key: str) -> tuple[int | None, int | None]:
        """Return the (line, column) of `key`'s value, else of the object itself."""
        return self.keys.get(key, (self.line, self.column))  # type: ignore[return-value]


def _locate(node: Node, index: int) -> _Where:
    line, column = _mark_position(node.start_mark)
    where = _Where(index, line, column)
    if isinstance(node, MappingNode):
        for key_node, value_node in node.value:
            if isinstance(key_node, ScalarNode):
                where.keys[key_node.value] = _mark_position(value_node.start_mark)  # type: ignore[assignment]
                if key_node.value == "items" and isinstance(value_node, SequenceNode):
                    where.items = [_locate(item, index) for item in value_node.value]
    return where


def _compose_documents(loader_class: type, text: str) -> list[tuple[dict, _Where]]:
    try:
        loader = loader_class(text)
    except UnicodeEncodeError as exc:
        line, column = _position(text, exc.start)
        raise ManifestError("text contains an unpaired surrogate character; save it as UTF-8", line=line, column=column)
    except yaml.reader.ReaderError as exc:
        line, column = _position(text, exc.position)
        raise ManifestError(
            f"invalid YAML: control character #x{exc.character:04x} is not allowed; remove it or write it escaped "
            'inside double quotes ("\\x07")',
            line=line,
            column=column,
        )
    documents: list[tuple[dict, _Where]] = []
    index = 0
    try:
        while loader.check_node():
            start = loader.peek_event().start_mark
            node = loader.get_node()
            if node is not None and not _is_empty(node):
                data = loader.construct_document(node)
                if not isinstance(data, dict):
                    line, column = _mark_position(node.start_mark or start)
                    raise ManifestError(
                        f"document {index + 1} is {kind_of(data)}, not a mapping; each document must be a "
                        "Kubernetes object (apiVersion, kind, metadata, spec)",
                        line=line,
                        column=column,
                        document=index,
                    )
                documents.append((data, _locate(node, index)))
            index += 1
    except ManifestError as exc:
        if exc.document is None:
            exc.document = index
        raise
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line, column = _mark_position(mark)
        problem = exc.problem or exc.context or "invalid YAML"
        if "\t" in problem or "'\\t'" in problem or (mark is not None and text[mark.index : mark.index + 1] == "\t"):
            problem += " (tabs are not allowed for indentation in YAML; use spaces)"
        raise ManifestError(f"invalid YAML: {problem}", line=line, column=column, document=index)
    except yaml.reader.ReaderError as exc:
        line, column = _position(text, exc.position)
        raise ManifestError(
            f"invalid YAML: control character #x{exc.character:04x} is not allowed; remove it or write it escaped",
            line=line,
            column=column,
            document=index,
        )
    except yaml.YAMLError as exc:
        raise ManifestError(f"invalid YAML: {exc}", document=index)
    except RecursionError:
        raise ManifestError(f"document is nested too deeply (limit {MAX_DEPTH} levels)", document=index)
    finally:
        loader.dispose()
    return documents


def _is_empty(node: Node) -> bool:
    return isinstance(node, ScalarNode) and node.tag == "tag:yaml.org,2002:null" and node.value in ("", "~", "null")


def kind_of(value: Any) -> str:
    """Return how a message names the kind of ``value``: "a mapping", "a list", "a string", "a boolean", "null",
    "an integer" or "a <type name>"."""
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, bool):
        return "a boolean"
    if value is None:
        return "null"
    if isinstance(value, int):
        return "an integer"
    return f"a {type(value).__name__}"


class _DuplicateJsonKey(ManifestError):
    """JSON reports no position for duplicate keys; the YAML reader's error (which has one) is preferred."""


def _json_document(text: str) -> dict:
    """Return the JSON object in `text`.

    Raises json.JSONDecodeError for a syntax error (the caller then tries YAML), _DuplicateJsonKey, or
    ManifestError when the JSON is valid but not a single object.
    """

    def pairs(items: list[tuple[str, Any]]) -> dict:
        result: dict = {}
        for key, value in items:
            if key in result:
                raise _DuplicateJsonKey(f"duplicate key '{key}' in the same JSON object; keep only one of them")
            result[key] = value
        return result

    def constant(name: str) -> Any:
        raise json.JSONDecodeError(f"JSON constant {name} is not allowed; use a number or a string", text, 0)

    try:
        data = json.loads(text, object_pairs_hook=pairs, parse_constant=constant)
    except RecursionError:
        raise ManifestError("JSON document is nested too deeply", document=0)
    if isinstance(data, list):
        raise ManifestError(
            "a top-level JSON array is not a Kubernetes object; wrap the items in "
            '{"apiVersion": "v1", "kind": "List", "items": [...]}',
            line=1,
            column=1,
            document=0,
        )
    if not isinstance(data, dict):
        raise ManifestError(f"JSON document is {kind_of(data)}, not an object", line=1, column=1, document=0)
    if _depth(data) > MAX_DEPTH:
        raise ManifestError(f"document is nested deeper than {MAX_DEPTH} levels", document=0)
    return data


def _json_where(text: str) -> _Where:
    """Return field positions for a JSON document (read as YAML flow style, for small input only)."""
    if len(text) <= REPARSE_LIMIT:
        try:
            located = _yaml_documents(text)
        except ManifestError:
            located = []
        if len(located) == 1:
            return located[0][1]
    return _Where(0, 1, 1)


def _depth(value: Any) -> int:
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, level = stack.pop()
        deepest = max(deepest, level)
        if isinstance(item, dict):
            stack.extend((v, level + 1) for v in item.values())
        elif isinstance(item, list):
            stack.extend((v, level + 1) for v in item)
    return deepest


def load_documents(text: str | bytes) -> list[dict]:
    """Parse YAML (one or many `---`-separated documents) or JSON into plain dicts.

    Returns the non-empty documents, each a dict with string keys. Raises ManifestError (with line/column where
    known) for input over 1 MiB, invalid UTF-8, syntax errors, tabs used as indentation, anchors/aliases, explicit
    tags, duplicate keys, non-string keys, non-mapping documents and nesting deeper than MAX_DEPTH.
    """
    return [document for document, _ in _load_located(text)]


def _load_located(text: str | bytes) -> list[tuple[dict, _Where]]:
    source = _decode(text)
    if not source.lstrip().startswith(("{", "[")):
        return _yaml_documents(source)
    # JSON goes through `json` first: it is fast, and it joins escaped surrogate pairs ("\ud83d\ude00") into one
    # character where YAML readers leave two unpaired halves.
    json_error: ManifestError | None = None
    try:
        return [(_json_document(source), _json_where(source))]
    except json.JSONDecodeError as exc:
        json_error = ManifestError(f"invalid JSON: {exc.msg}", line=exc.lineno, column=exc.colno, document=0)
    except _DuplicateJsonKey:
        pass  # the YAML reader reports the same duplicate with its line and column
    try:
        return _yaml_documents(source)  # YAML flow style, e.g. {apiVersion: v1, kind: List}
    except ManifestError:
        if json_error is not None:
            raise json_error from None
        raise


def _check_runtime(document: dict, where: _Where, label: str) -> None:
    api_version, kind = document.get("apiVersion"), document.get("kind")
    if api_version == API_VERSION and kind == KIND:
        return
    found = f"apiVersion {api_version!r}, kind {kind!r}"
    if kind == "TrainingRuntime" and api_version == API_VERSION:
        hint = "this is a namespaced TrainingRuntime; change kind to ClusterTrainingRuntime, remove namespace"
        path = "kind"
    elif kind == KIND:
        hint, path = f"set apiVersion to {API_VERSION}", "apiVersion"
    else:
        hint, path = f"expected apiVersion {API_VERSION} and kind {KIND}", "kind"
    metadata = document.get("metadata")
    name = metadata.get("name") if isinstance(metadata, dict) else None
    label += f" ({name})" if isinstance(name, str) and name else ""
    line, column = where.of(path)
    raise ManifestError(f"{label} has {found}: {hint}", line=line, column=column, document=where.index, path=path)


def load_runtimes(text: str | bytes) -> list[dict]:
    """Parse text into ClusterTrainingRuntime manifests; a `List` document's `items` are unpacked.

    Returns the runtimes in input order. Raises ManifestError naming the document (and the line of its `kind` or
    `apiVersion`) and what was found when a document is not a `trainer.kubeflow.org/v1alpha1`
    ClusterTrainingRuntime, or when there is none at all.
    """
    runtimes: list[dict] = []
    for document, where in _load_located(text):
        label = f"document {where.index + 1}"
        if document.get("kind") == "List" and "items" in document:
            items = document["items"]
            line, column = where.of("items")
            if not isinstance(items, list):
                raise ManifestError(
                    "List 'items' must be a list of objects",
                    line=line,
                    column=column,
                    document=where.index,
                    path="items",
                )
            for position, item in enumerate(items):
                item_where = where.items[position] if position < len(where.items) else _Where(where.index, line, column)
                if not isinstance(item, dict):
                    raise ManifestError(
                        f"List item {position + 1} is {kind_of(item)}, not an object",
                        line=item_where.line,
                        column=item_where.column,
                        document=where.index,
                        path=f"items[{position}]",
                    )
                _check_runtime(item, item_where, f"{label}, List item {position + 1}")
                runtimes.append(item)
            continue
        _check_runtime(document, where, label)
        runtimes.append(document)
    if not runtimes:
        raise ManifestError(f"no {KIND} found; the input is empty")
    return runtimes


def load_runtime(text: str | bytes) -> dict:
    """Parse text that must contain exactly one ClusterTrainingRuntime; return it. Raises ManifestError."""
    runtimes = load_runtimes(text)
    if len(runtimes) != 1:
        raise ManifestError(
            f"expected exactly one {KIND}, found {len(runtimes)}; use import to load several at once",
            document=1,
        )
    return runtimes[0]


# --------------------------------------------------------------------------------------------------- dumping


class _Dumper(yaml.SafeDumper):
    """Block style, key order preserved, nested lists indented, never anchors; multi-line strings as `|` blocks."""

    def increase_indent(self, flow: bool = False, indentless: bool = False) -> None:
        super().increase_indent(flow, False)

    def ignore_aliases(self, data: Any) -> bool:
        return True


_RESOLVER = _PlainResolver()


def _looks_numeric(value: str) -> bool:
    """True for strings some YAML reader may take for a number (`08`, `1_0`, `inf`): they are written quoted."""
    try:
        float(value.replace("_", ""))
    except ValueError:
        return False
    return True


def _represent_str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style: str | None
    if any(ch in "\x85\u2028\u2029\ufeff" or not (ch.isprintable() or ch == "\n") for ch in value):
        # Unicode line separators and control characters survive only as escapes in a double-quoted scalar.
        style = '"'
    elif _RESOLVER.resolve(ScalarNode, value, (True, False)) != "tag:yaml.org,2002:str" or _looks_numeric(value):
        # PyYAML's own resolver misses some forms go-yaml reads as non-strings (y, n, 1e3, 0o17): quote them too.
        style = "'"
    else:
        style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _represent_str)


def dump_yaml(manifest: dict) -> str:
    """Return `manifest` as block-style YAML (kubectl-ready, key order kept) that load_documents reads back equal."""
    return yaml.dump(
        manifest,
        Dumper=_Dumper,
        sort_keys=False,
        default_flow_style=False,
        allow_unicode=True,
        width=1 << 20,
        indent=2,
    )


def dump_many(manifests: list[dict]) -> str:
    """Return the manifests as one YAML stream, documents separated by `---`."""
    return "---\n".join(dump_yaml(manifest) for manifest in manifests)


# --------------------------------------------------------------------------------------------------- shaping


def strip_server_fields(manifest: dict) -> dict:
    """Return a deep copy of `manifest` without `status`, server-populated metadata and last-applied annotation."""
    result = copy.deepcopy(manifest)
    result.pop("status", None)
    metadata = result.get("metadata")
    if isinstance(metadata, dict):
        for field in SERVER_METADATA_FIELDS:
            metadata.pop(field, None)
        annotations = metadata.get("annotations")
        if isinstance(annotations, dict):
            annotations.pop(LAST_APPLIED_ANNOTATION, None)
            if not annotations:
                metadata.pop("annotations")
    return result


def new_runtime(
    name: str, *, num_nodes: int = 1, image: str = "pytorch/pytorch:2.13.0-cuda13.0-cudnn9-runtime"
) -> dict:
    """Return a minimal valid torch ClusterTrainingRuntime named `name` (the "New policy" skeleton): one
    ReplicatedJob "node" running `image` on `num_nodes` nodes."""
    return {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "metadata": {"name": name, "labels": {FRAMEWORK_LABEL: "torch"}},
        "spec": {
            "mlPolicy": {"numNodes": num_nodes, "torch": {}},
            "template": single_node_template(image),
        },
    }


def single_node_template(image: str) -> dict:
    """Return a runtime's ``spec.template``: one ReplicatedJob "node", labelled as the trainer step, whose pods run
    one container "node" with ``image``."""
    return {
        "spec": {
            "replicatedJobs": [
                {
                    "name": "node",
                    "template": {
                        "metadata": {"labels": {ANCESTOR_LABEL: "trainer"}},
                        "spec": {"template": {"spec": {"containers": [{"name": "node", "image": image}]}}},
                    },
                }
            ]
        }
    }
