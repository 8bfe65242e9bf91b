"""CLI: `python -m sandbox --port PORT --kubeconfig PATH [--topology demo|west|large|none] [--no-controllers]
[--kube-version 1.37|1.36] [--block-key KEY] [--gate NAME=true|false ...] [--trainer-crd VARIANT]`.
Prints `sandbox ready at <url>` once it listens."""

from __future__ import annotations

import argparse
import logging
import signal
import sys
import threading
from typing import Any

from sandbox.apiserver.server import ServerConfig, build_registry, make_server
from sandbox.apiserver.workloads import DEFAULT_GATES
from sandbox.bootstrap import TRAINER_CRD_V24_V1BETA1, TRAINER_CRD_VARIANTS, load_crds
from sandbox.kubeconfig import write_kubeconfig

DEFAULT_BLOCK_KEY = "cloud.provider.com/topology-block"


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """Returns the parsed command line."""
    parser = argparse.ArgumentParser(prog="python -m sandbox", description="Sandbox Kubernetes API server.")
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=0, help="port to listen on; 0 picks a free port")
    parser.add_argument("--kubeconfig", required=True, help="where to write a kubeconfig for this server")
    parser.add_argument("--topology", choices=("demo", "west", "large", "none"), default="demo")
    parser.add_argument("--no-controllers", action="store_true", help="serve the API only, no simulated cluster")
    parser.add_argument("--kube-version", choices=("1.37", "1.36"), default="1.37",
                        help="1.37 serves scheduling.k8s.io/v1beta1, 1.36 serves v1alpha2")
    parser.add_argument("--block-key", default=DEFAULT_BLOCK_KEY, help="node label key of the network block")
    parser.add_argument("--watch-timeout", type=float, default=1800.0, help="server-side watch timeout (s)")
    parser.add_argument("--bookmark-interval", type=float, default=5.0, help="seconds between watch bookmarks")
    parser.add_argument("--history", type=int, default=20000, help="watch events kept per resource")
    parser.add_argument("--gate", action="append", default=[], metavar="NAME=true|false",
                        help="set an API-server feature gate, e.g. TopologyAwareWorkloadScheduling=false (repeatable; "
                             "comma-separated pairs work too); known: " + ", ".join(sorted(DEFAULT_GATES)))
    parser.add_argument("--trainer-crd", choices=TRAINER_CRD_VARIANTS, default=TRAINER_CRD_V24_V1BETA1,
                        help="Trainer runtime CRDs to install: v2.4 with the 1.37 embedded scheduling types "
                             "(default), v2.4 with the 1.36 (v1alpha2) types, or v2.3 without spec.scheduling")
    parser.add_argument("--verbose", action="store_true", help="log every request")
    args = parser.parse_args(argv)
    try:
        args.gates = parse_gates(args.gate)
    except ValueError as exc:
        parser.error(str(exc))
    return args


def parse_gates(values: list[str]) -> dict[str, bool]:
    """Returns {gate: enabled} from `NAME=true|false` items (each may hold comma-separated pairs).

    Raises ValueError naming an unknown gate or a value that is not true/false.
    """
    gates: dict[str, bool] = {}
    for item in (part.strip() for value in values for part in value.split(",")):
        if not item:
            continue
        name, sep, value = item.partition("=")
        if name not in DEFAULT_GATES:
            raise ValueError(f"--gate: unrecognized feature gate {name!r}; known: {', '.join(sorted(DEFAULT_GATES))}")
        if not sep or value.lower() not in ("true", "false"):
            raise ValueError(f"--gate {item!r}: expected {name}=true or {name}=false")
        gates[name] = value.lower() == "true"
    return gates


def _preset_nodes(topology: str, block_key: str) -> list[dict[str, Any]]:
    if topology == "none":
        return []
    try:
        from sandbox.topology import preset_nodes
    except ImportError as exc:
        raise SystemExit(f"sandbox: --topology {topology} needs sandbox.topology.preset_nodes ({exc}); "
                         f"use --topology none to start without nodes")
    return preset_nodes(topology, block_key=block_key)


def main(argv: list[str] | None = None) -> int:
    """Runs the sandbox until SIGTERM/SIGINT. Returns the exit code."""
    args = parse_args(argv)
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING,
                        format="%(asctime)s %(name)s %(levelname)s %(message)s")
    nodes = _preset_nodes(args.topology, args.block_key)
    registry = build_registry(args.kube_version, nodes, history_limit=args.history,
                              crds=load_crds(variant=args.trainer_crd), gates=args.gates)
    config = ServerConfig(kube_version=args.kube_version, watch_timeout=args.watch_timeout,
                          bookmark_interval=args.bookmark_interval, verbose=args.verbose)
    server = make_server(args.host, args.port, registry, config)
    write_kubeconfig(args.kubeconfig, server.url)
    stop = threading.Event()

    def on_signal(signum: int, _frame: Any) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    serving = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.2}, name="sandbox-http",
                               daemon=True)
    serving.start()
    if not args.no_controllers:
        try:
            from sandbox.controllers import start_controllers
        except ImportError as exc:
            server.shutdown_all()
            raise SystemExit(f"sandbox: controllers need sandbox.controllers.start_controllers ({exc}); "
                             f"use --no-controllers to serve the API only")
        start_controllers(server.url, kube_version=args.kube_version, stop=stop)
    # Only the gates set away from their defaults (DRAWorkloadResourceClaims is off by default, as in 1.37).
    changed = ", ".join(f"{name}={'true' if on else 'false'}" for name, on in sorted(registry.gates.items())
                        if on != DEFAULT_GATES.get(name))
    print(f"sandbox ready at {server.url} (kube {args.kube_version}, {len(nodes)} nodes, "
          f"kubeconfig {args.kubeconfig}, trainer CRDs {args.trainer_crd}{', gates ' + changed if changed else ''})",
          flush=True)
    stop.wait()
    server.shutdown_all()
    registry.gc.stop()
    server.server_close()
    print("sandbox stopped", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
