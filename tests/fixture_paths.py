"""Where the vendored upstream inputs live inside the repository (see tests/fixtures/reference/SOURCE.md)."""

from pathlib import Path

FIXTURES = Path(__file__).resolve().parent / "fixtures"
REFERENCE_RUNTIMES = FIXTURES / "reference" / "runtimes"
REFERENCE_CRDS = FIXTURES / "reference" / "crds"
