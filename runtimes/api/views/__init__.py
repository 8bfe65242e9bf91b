"""Views of the policy REST API, one module per area."""
