"""Node names packed for a long-lived snapshot: `NodeNames`, row → name, and its `NodeRows` view, name → row.

A list of str plus a {name: row} dict cost ~110 bytes a node (the string, the list slot, the dict entry and an int
object per row); here the names are one UTF-8 buffer with an end offset per row and the index is an open-addressing
table of int32 rows (~25 bytes a node). Rows are only ever appended (a snapshot never reuses or drops a row).
The table is keyed by the process's str hash, so it is rebuilt when unpickled, never stored.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any, overload

_EMPTY = -1
_ERRORS = "surrogatepass"  # any str round-trips, even one no API server would send


class NodeNames(Sequence[str]):
    """Append-only sequence of distinct node names, indexed by name (`rows`, `row`). Not thread-safe."""

    __slots__ = ("_blob", "_ends", "_mask", "_table", "rows")

    def __init__(self, names: Iterable[str] = ()) -> None:
        self._blob = bytearray()
        self._ends = array("I")  # row → end offset of its name in _blob (the start is the previous row's end)
        self._table = array("i", [_EMPTY]) * 8
        self._mask = 7
        self.rows = NodeRows(self)
        for name in names:
            self.append(name)

    # -- sequence --------------------------------------------------------------------------------------------

    def __len__(self) -> int:
        return len(self._ends)

    @overload
    def __getitem__(self, index: int) -> str: ...

    @overload
    def __getitem__(self, index: slice) -> list[str]: ...

    def __getitem__(self, index: int | slice) -> str | list[str]:
        """Return the name of row `index` (a list for a slice); raises IndexError past the end."""
        if isinstance(index, slice):
            return [self[row] for row in range(*index.indices(len(self._ends)))]
        ends = self._ends
        if index < 0:
            index += len(ends)
        end = ends[index]  # raises IndexError, as a list would
        return self._blob[ends[index - 1] if index else 0: end].decode("utf-8", _ERRORS)

    def __iter__(self) -> Iterator[str]:
        return iter(self.tolist())

    def tolist(self) -> list[str]:
        """Return the names as a list, row order."""
        ends = self._ends
        if not ends:
            return []
        text = self._blob.decode("utf-8", _ERRORS)
        starts = array("I", [0])
        starts.extend(ends[:-1])
        if len(text) == len(self._blob):  # all ASCII (node names always are): byte offsets are character offsets
            return [text[start:end] for start, end in zip(starts, ends, strict=True)]
        blob = self._blob
        return [blob[start:end].decode("utf-8", _ERRORS) for start, end in zip(starts, ends, strict=True)]

    def __contains__(self, name: object) -> bool:
        return self.row(name) != _EMPTY

    def __eq__(self, other: object) -> bool:
        if isinstance(other, NodeNames):
            return self._ends == other._ends and self._blob == other._blob
        if isinstance(other, Sequence) and not isinstance(other, str | bytes):
            return list(self) == list(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # mutable, like the list it replaces

    def __repr__(self) -> str:
        return f"NodeNames({list(self)!r})"

    def __reduce__(self) -> tuple[Any, ...]:
        # The hash table depends on the process's str hash seed: store the names, rebuild the table on load.
        return (NodeNames, (self.tolist(),))

    def append(self, name: str) -> None:
        """Add `name` as the next row; raises ValueError when it is already present, TypeError for a non-str."""
        if not isinstance(name, str):
            raise TypeError(f"a node name is a str, got {type(name).__name__}")
        encoded = name.encode("utf-8", _ERRORS)
        table, mask, ends, blob = self._table, self._mask, self._ends, self._blob
        slot = hash(name) & mask
        while (found := table[slot]) != _EMPTY:
            if blob[ends[found - 1] if found else 0: ends[found]] == encoded:
                raise ValueError(f"node name {name!r} is already present")
            slot = (slot + 1) & mask
        row = len(ends)
        blob += encoded
        ends.append(len(blob))
        if len(ends) * 3 > len(table) * 2:  # keep the table at most 2/3 full: short probe runs
            self._rehash(len(table) * 2)
        else:
            table[slot] = row

    def copy(self) -> NodeNames:
        """Return an independent copy (buffers copied, no rehashing)."""
        other = NodeNames.__new__(NodeNames)
        other._blob = bytearray(self._blob)
        other._ends = array("I", self._ends)
        other._table = array("i", self._table)
        other._mask = self._mask
        other.rows = NodeRows(other)
        return other

    def nbytes(self) -> int:
        """Return the bytes held by the buffers (names, offsets, index)."""
        return (self._blob.__sizeof__() + self._ends.__sizeof__() + self._table.__sizeof__())

    # -- index -----------------------------------------------------------------------------------------------

    def row(self, name: object) -> int:
        """Return the row of `name`, or -1 when it is not present (or not a str)."""
        if not isinstance(name, str):
            return _EMPTY
        table, mask, ends, blob = self._table, self._mask, self._ends, self._blob
        slot = hash(name) & mask
        encoded = None
        while True:
            row = table[slot]
            if row == _EMPTY:
                return _EMPTY
            if encoded is None:
                encoded = name.encode("utf-8", _ERRORS)
            if blob[ends[row - 1] if row else 0: ends[row]] == encoded:
                return row
            slot = (slot + 1) & mask

    def _place(self, name_hash: int, row: int) -> None:
        table, mask = self._table, self._mask
        slot = name_hash & mask
        while table[slot] != _EMPTY:
            slot = (slot + 1) & mask
        table[slot] = row

    def _rehash(self, size: int) -> None:
        self._table = array("i", [_EMPTY]) * size
        self._mask = size - 1
        for row, name in enumerate(self.tolist()):
            self._place(hash(name), row)


class NodeRows(Mapping[str, int]):
    """The name → row view of a `NodeNames`; assigning a name's own row is accepted (a dict's idiom), nothing else."""

    __slots__ = ("_names",)

    def __init__(self, names: NodeNames) -> None:
        self._names = names

    def __getitem__(self, name: str) -> int:
        row = self._names.row(name)
        if row == _EMPTY:
            raise KeyError(name)
        return row

    def get(self, name: object, default: Any = None) -> Any:
        """Return the row of `name`, or `default` when it is not present."""
        row = self._names.row(name)
        return default if row == _EMPTY else row

    def __contains__(self, name: object) -> bool:
        return self._names.row(name) != _EMPTY

    def __iter__(self) -> Iterator[str]:
        return iter(self._names)

    def __len__(self) -> int:
        return len(self._names)

    def items(self) -> list[tuple[str, int]]:  # type: ignore[override]
        """Return (name, row) pairs in row order (a list: one pass over the buffer instead of a lookup per name)."""
        return list(zip(self._names, range(len(self._names)), strict=True))

    def __setitem__(self, name: str, row: int) -> None:
        """Accept `rows[name] = row` when the name already sits on that row; raises ValueError otherwise."""
        if self._names.row(name) != row:
            raise ValueError(f"node rows are assigned by NodeNames.append, not by name ({name!r} → {row})")

    def __repr__(self) -> str:
        return f"NodeRows({dict(self.items())!r})"
