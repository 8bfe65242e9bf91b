"""The sandbox's Kubernetes API server: HTTP front (`server`), API semantics (`registry`), validation, garbage
collection, server-side apply, patches, schemas, selectors, tables, discovery, watch and the versioned store.

The simulated controllers (`sandbox.controllers`) never import this package: they talk to it over HTTP only.
"""
