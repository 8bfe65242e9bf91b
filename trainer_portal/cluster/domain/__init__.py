"""Pure code of the cluster app: reading facts from objects the cluster serves (no I/O)."""
