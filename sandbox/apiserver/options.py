"""Options of a write request (query parameters) and the patch media types the server accepts."""

from __future__ import annotations

import string
from dataclasses import dataclass, field

PATCH_JSON = "application/json-patch+json"
PATCH_MERGE = "application/merge-patch+json"
PATCH_STRATEGIC = "application/strategic-merge-patch+json"
PATCH_APPLY = "application/apply-patch+yaml"
PATCH_APPLY_CBOR = "application/apply-patch+cbor"


@dataclass
class WriteOptions:
    """Query options of a write: dryRun=All, fieldManager, force (apply only), fieldValidation.

    `warnings` collects the texts the server returns in `Warning: 299 - "..."` headers.
    """

    dry_run: bool = False
    manager: str = ""
    force: bool = False
    field_validation: str = "Warn"
    warnings: list[str] = field(default_factory=list)


def strip_chars(value: str) -> str:
    """Returns value without characters that are not allowed in a field manager name."""
    return "".join(ch for ch in value if ch in string.printable and ch not in "\r\n\t")[:128]
