"""Sandbox cluster: a pure-Python HTTP server that speaks enough of the Kubernetes API for the official client,
DynamicClient and kubectl, plus simulated controllers (sandbox.controllers) and topology presets
(sandbox.topology). Start it with `python -m sandbox --port 0 --kubeconfig PATH`; see docs/sandbox.md.
"""
