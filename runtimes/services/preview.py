"""Placement preview (application service): inputs → validated request → expansion + snapshot + placement → result.

Interfaces (the HTML panel, the REST API) turn raw input (a JSON body through `PreviewRequestSerializer`, or form
fields through `runtimes.forms.preview.request_data_from_form`) into the domain `PreviewRequest` with
`preview_request_parse`, then call `preview_policy` (a saved policy) or `preview_manifest` (an unsaved manifest).
Both return a JSON-serialisable dict built by the view model of `runtimes.domain.preview`. Every problem with the
input is raised as `PreviewInputError`, whose `.errors` are `{path, message}` items naming the field and the fix.
A topology key that no node carries is not an input error: the verdict explains it.

Synthetic clusters are cached in-process (LRU keyed by their parameters), so that a user typing in the form does
not rebuild a 50,000-node snapshot on every keystroke.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from django.conf import settings

from runtimes.domain.expansion import Expansion, ExpansionError, expand
from runtimes.domain.manifest import ManifestError, dump_many, load_runtime
from runtimes.domain.placement_adapter import job_requests, requests_from_expansion
from runtimes.domain.policy import ValidationOptions, validate_runtime
from runtimes.domain.preview import (
    API_V1ALPHA2,
    CAVEAT,
    FRAGMENTATIONS,
    SOURCE_LIVE,
    UNSUPPORTED_API_WARNING,
    HeatBase,
    PreviewInputError,
    PreviewRequest,
    SyntheticTopology,
    counted,
    fragmentation_items,
    heat_base,
    heatmap,
    quality,
    quality_items,
    short_placement,
    span,
    startup_verdict,
    strip_name,
    verdict,
)
from runtimes.domain.preview import preview_request_parse as _parse
from runtimes.selectors import policy_get
from trainer_portal.cluster import selectors as cluster_selectors
from trainer_portal.placement.engine import PlacementInputError, PlacementRequest, place
from trainer_portal.placement.quantities import GPU, QuantityError, parse_resource
from trainer_portal.placement.snapshot import ClusterSnapshot, TopologyKeys, UnknownTopologyKey
from trainer_portal.placement.synthetic import synthetic_cluster

# A 50,000-node synthetic snapshot with its heat-map summary retains ~12 MB (measured with tracemalloc); four
# parameter sets keep a user's back-and-forth typing warm without letting one process grow past ~50 MB.
SNAPSHOT_CACHE_SIZE = 4
# The synthetic generator's patterns (docs/reference/placement.md §6), labelled for the form.
# Per-node requests beyond these are typos (a node with 1 Pi of memory does not exist); refusing them also keeps
# every amount well inside the int64 arithmetic of the placement engine.
# Synthetic parameter bounds: wide enough for any real cluster shape, narrow enough to refuse a typo such as
# 1,000,000 racks per block that would allocate gigabytes.






# ------------------------------------------------------------------------------------------------ request parsing












def preview_request_parse(data: Mapping[str, Any], *, live_available: bool | None = None,
                          cluster: str | None = None) -> PreviewRequest:
    """Return the validated `PreviewRequest` for ``data`` (see `runtimes.domain.preview.preview_request_parse`).

    ``live_available`` defaults to whether the worker has stored a live snapshot of ``cluster`` (the default cluster
    when None). Raises PreviewInputError.
    """
    return _parse(data, live_available=live_source_available(cluster) if live_available is None else live_available)


# ------------------------------------------------------------------------------------------------ topology sources


def live_source_available(cluster: str | None = None) -> bool:
    """Return True when the worker has stored a live snapshot of ``cluster`` (default cluster when None)."""
    from trainer_portal.cluster import snapshots as topology

    return topology.live_source_available(cluster)


@dataclass(frozen=True)
class _Source:
    """A snapshot to place on, with its heat-map summary and how to describe it."""

    snapshot: ClusterSnapshot
    heat: HeatBase
    description: str
    age_seconds: float | None

    @property
    def summary(self) -> dict:
        """Return the snapshot's zone → block → rack summary (free/total GPUs, node counts, keys)."""
        return self.heat.summary


@lru_cache(maxsize=SNAPSHOT_CACHE_SIZE)
def _synthetic_source(topology: SyntheticTopology, block_key: str, need: int, pod_gpus: int) -> _Source:
    """Return the synthetic cluster for `topology` (cached: identical parameters share one snapshot).

    `block_key` is the node label of network blocks. `need` and `pod_gpus` only shape the F5 near-miss pattern
    (the best zone is one pod short of `need`); callers pass 0 for the other patterns so that every request shape
    shares the cached cluster.
    """
    blocks = topology.zones * topology.blocks_per_zone
    snapshot = synthetic_cluster(
        keys=TopologyKeys(block=block_key),
        zones=topology.zones,
        blocks_per_zone=topology.blocks_per_zone,
        racks=blocks * topology.racks_per_block,
        nodes_per_rack=topology.nodes_per_rack,
        gpus_per_node=topology.gpus_per_node,
        fragmentation=topology.fragmentation,
        seed=topology.seed,
        **({"need": max(need, 1), "pod_gpus": max(pod_gpus, 1)} if topology.fragmentation == "F5" else {}),
    )
    description = (
        f"synthetic: {counted(topology.zones, 'zone')} × {counted(topology.blocks_per_zone, 'block')} × "
        f"{counted(topology.racks_per_block, 'rack')} × {counted(topology.nodes_per_rack, 'node')} × "
        f"{counted(topology.gpus_per_node, 'GPU')} = {counted(topology.node_count, 'node')}, "
        f"{FRAGMENTATIONS[topology.fragmentation]}, seed {topology.seed}"
    )
    return _Source(snapshot, heat_base(snapshot.to_summary()), description, None)


_live_heat: dict[tuple[int, int], HeatBase] = {}


def _live_source(cluster: str | None = None) -> _Source:
    """Return the live snapshot of ``cluster`` (default cluster when None) the worker stored; raises
    PreviewInputError when the cluster is unknown or has none yet.

    The heat-map summary is kept per snapshot object and version, so typing does not redo it.
    """
    from trainer_portal.cluster import selectors as clusters

    try:
        live = clusters.live_snapshot(clusters.cluster_named(cluster))
    except clusters.UnknownCluster as exc:
        raise PreviewInputError([{"path": "cluster", "message": exc.message}]) from None
    if live is None:
        raise PreviewInputError([{"path": "topology.source", "message": "no live cluster snapshot has been "
                                                                        "collected yet; use the synthetic source"}])
    snapshot = live.snapshot
    stamp = (id(snapshot), snapshot.version)
    heat = _live_heat.get(stamp)
    if heat is None:
        heat = heat_base(snapshot.to_summary())
        if len(_live_heat) >= 8:  # one current snapshot per cluster is what matters
            _live_heat.clear()
        _live_heat[stamp] = heat
    server = f" {live.server}" if getattr(live, "server", "") else ""
    description = (f"live cluster{server}: {counted(snapshot.node_count, 'node')}, "
                   f"snapshot {live.age_seconds:,.0f} s old ({live.source})")
    return _Source(snapshot, heat, description, round(live.age_seconds, 1))


# ------------------------------------------------------------------------------------------------ manifest + expansion


def _manifest_object(manifest: object) -> dict:
    """Return the unsaved runtime `manifest` (an object, or YAML/JSON text) as a dict; raises PreviewInputError."""
    if manifest is None or (isinstance(manifest, str) and not manifest.strip()):
        raise PreviewInputError([{"path": "manifest", "message": "send the ClusterTrainingRuntime to preview, as an "
                                                                 "object or as YAML/JSON text"}])
    if isinstance(manifest, str):
        try:
            return load_runtime(manifest)
        except ManifestError as error:
            return _raise_manifest_error(error)
    if not isinstance(manifest, dict):
        raise PreviewInputError([{"path": "manifest", "message": f"must be an object or YAML text, not "
                                                                 f"{type(manifest).__name__}"}])
    return manifest


def _raise_manifest_error(error: Any) -> dict:
    path = f"manifest.{error.path}" if error.path else "manifest"
    raise PreviewInputError([{"path": path, "message": str(error)}])


def _cluster_drop_warnings(manifest: dict, cluster: str | None = None) -> list[str]:
    """Return the warnings about what ``cluster`` (the default when None) would drop from a saved policy's objects
    (level-3 claims while DRAWorkloadResourceClaims is off, per its last status check); [] when nothing or unknown."""
    claims_gate = cluster_selectors.scheduling_facts(cluster).get("dra_claims_gate")
    if claims_gate is not False:
        return []
    report = validate_runtime(manifest, ValidationOptions(dra_claims_gate=False))
    return [f"{p.path}: {p.message}" for p in report.warnings if p.code == "scheduling.resource_claims.gate_off"]


def _validation_warnings(manifest: dict, request: PreviewRequest, cluster: str | None = None) -> list[str]:
    """Return the validator's warnings for an unsaved manifest (against ``cluster``'s facts, the default's when
    None); raises PreviewInputError for its errors."""
    # The cluster's DRAWorkloadResourceClaims gate (last status check): level-3 claims the cluster would drop are
    # named in the preview's warnings, as the validator names them.
    claims_gate = cluster_selectors.scheduling_facts(cluster).get("dra_claims_gate")
    report = validate_runtime(manifest, ValidationOptions(composite_enabled=request.composite,
                                                          dra_claims_gate=claims_gate))
    if report.errors:
        raise PreviewInputError([
            {"path": f"manifest.{p.path}" if p.path else "manifest", "message": p.message, "code": p.code}
            for p in report.errors
        ])
    return [f"{p.path}: {p.message}" if p.path else p.message for p in report.warnings]


def _request_path(path: str) -> str:
    """Return the request field an ExpansionError path belongs to (TrainJob inputs vs. the runtime manifest)."""
    if path == "trainer.numNodes":
        return "numNodes"
    if path.startswith("trainer.resourcesPerNode"):
        return path.removeprefix("trainer.")
    if path in ("apiVersion", ""):
        return path or "manifest"
    return f"manifest.{path}"


def _expand(manifest: dict, request: PreviewRequest) -> Expansion:
    """Return the Expansion of `manifest` for `request`; raises PreviewInputError naming the field."""
    try:
        return expand(
            manifest,
            trainjob_name=request.trainjob_name,
            namespace="default",
            trainjob_uid="",
            num_nodes=request.num_nodes,
            resources_per_node=request.resources() or None,
            api_version=request.api_version,
            composite=request.composite,
        )
    except ExpansionError as error:
        raise PreviewInputError([{"path": _request_path(error.path), "message": error.message}])


def _yaml(expansion: Expansion) -> tuple[dict, str]:
    """Return ({workload, podGroups} manifests, the same as one multi-document YAML string)."""
    workload = expansion.workload_manifest()
    groups = expansion.podgroup_manifests()
    documents = [doc for doc in [workload, *groups] if doc is not None]
    text = dump_many(documents) if documents else "# The policy has no spec.scheduling: no Workload or PodGroups.\n"
    return {"workload": workload, "podGroups": groups}, text


# ------------------------------------------------------------------------------------------------ placement


def _main_request(expansion: Expansion) -> PlacementRequest | None:
    """Return the placement request that dominates the TrainJob (gang first, then most GPUs), or None."""
    try:
        requests = requests_from_expansion(expansion)
    except (PlacementInputError, QuantityError):
        return None

    def weight(request: Any) -> tuple:
        gpus = parse_resource(GPU, dict(request.resources).get(GPU, 0))
        return (request.policy == "gang", gpus * request.pod_count, request.pod_count)

    return max(requests, key=weight, default=None)


def _source(request: PreviewRequest, expansion: Expansion, cluster: str | None = None) -> _Source:
    """Return the snapshot source for `request` (live: ``cluster``'s); the F5 pattern is shaped by the TrainJob's
    main gang."""
    if request.source == SOURCE_LIVE:
        return _live_source(cluster)
    need = pod_gpus = 0
    if request.synthetic.fragmentation == "F5":
        main = _main_request(expansion)
        if main is not None:
            need = main.pod_count
            pod_gpus = int(parse_resource(GPU, dict(main.resources).get(GPU, 0)))
        pod_gpus = pod_gpus or request.synthetic.gpus_per_node
    return _synthetic_source(request.synthetic, _block_key(), need, pod_gpus)


def _block_key() -> str:
    """Return the node label of network blocks configured for this site (settings.TOPOLOGY_BLOCK_KEY)."""
    return getattr(settings, "TOPOLOGY_BLOCK_KEY", "") or TopologyKeys.block


def _topology_key_paths(manifest: dict, key: str) -> list[str]:
    """Return the manifest paths whose topology constraint names `key` (to point a 400 at the right field)."""
    found: list[str] = []

    def walk(value: Any, path: str) -> None:
        if isinstance(value, dict):
            if value.get("key") == key and path.endswith("]") and ".topology[" in path:
                found.append(f"{path}.key")
            for child_key, child in value.items():
                walk(child, f"{path}.{child_key}")
        elif isinstance(value, list):
            for index, child in enumerate(value):
                walk(child, f"{path}[{index}]")

    spec = manifest.get("spec") if isinstance(manifest.get("spec"), dict) else manifest
    walk(spec.get("scheduling"), "spec.scheduling")
    return found


def _check_topology_keys(expansion: Expansion, keys: TopologyKeys, manifest: dict) -> None:
    """Raise PreviewInputError for a topology key that is none of the cluster's zone/block/rack/host keys."""
    errors = []
    for key in dict.fromkeys(g.topology_key for g in expansion.pod_groups if g.topology_key):
        try:
            keys.level_of(key)
        except UnknownTopologyKey as error:
            paths = _topology_key_paths(manifest, key) or ["spec.scheduling"]
            errors.extend({"path": f"manifest.{path}", "message": str(error), "code": "unknown_topology_key"}
                          for path in paths)
    if errors:
        raise PreviewInputError(errors)


# ------------------------------------------------------------------------------------------------ presentation data


























# ------------------------------------------------------------------------------------------------ entry points


def preview_policy(*, name: str, request: PreviewRequest, snapshot: ClusterSnapshot | None = None,
                   cluster: str | None = None) -> dict:
    """Return the preview of saved policy `name` for `request` (see the module docstring for the shape).

    `snapshot` (a ClusterSnapshot) overrides the request's topology source, e.g. for a cluster page that already
    holds one; a live source is ``cluster``'s (the default cluster when None). Raises PolicyNotFound when there is
    no such policy, PreviewInputError when the request cannot be previewed.
    """
    policy = policy_get(name=name)
    return _preview(policy.manifest, request, policy_name=policy.name, saved=True,
                    warnings=_cluster_drop_warnings(policy.manifest, cluster), snapshot=snapshot, cluster=cluster)


def preview_manifest(*, manifest: object, request: PreviewRequest, snapshot: ClusterSnapshot | None = None,
                     cluster: str | None = None) -> dict:
    """Return the preview of an unsaved runtime `manifest` (an object, or YAML/JSON text) for `request`.

    The manifest is validated first; its errors are raised as PreviewInputError with paths under `manifest.`,
    its warnings are returned in the result. Nothing is saved. `snapshot` as for `preview_policy`.
    """
    runtime = _manifest_object(manifest)
    warnings = _validation_warnings(runtime, request, cluster)
    metadata = runtime.get("metadata") if isinstance(runtime.get("metadata"), dict) else {}
    name = metadata.get("name") if isinstance(metadata.get("name"), str) else ""
    return _preview(runtime, request, policy_name=name, saved=False, warnings=warnings, snapshot=snapshot,
                    cluster=cluster)


def _preview(manifest: dict, request: PreviewRequest, *, policy_name: str, saved: bool, warnings: list[str],
             snapshot: ClusterSnapshot | None = None, cluster: str | None = None) -> dict:

    expansion = _expand(manifest, request)
    if snapshot is not None:
        source = _Source(snapshot, heat_base(snapshot.to_summary()), f"given snapshot: {snapshot.node_count:,} nodes",
                         None)
    else:
        source = _source(request, expansion, cluster)
    _check_topology_keys(expansion, source.snapshot.keys, manifest)
    try:
        result = place(job_requests(expansion), source.snapshot)
    except PlacementInputError as error:
        raise PreviewInputError([{"path": "manifest.spec.scheduling", "message": str(error)}])
    except OverflowError:
        # Only absurd amounts get here (requests of the runtime's own containers, e.g. memory: 1e30).
        raise PreviewInputError([{"path": "manifest.spec.template", "message": "a container requests more of a "
                                  "resource than any node could offer; lower its resources.requests/limits"}])
    placement = result.to_dict()
    manifests, yaml_text = _yaml(expansion)
    by_name = {g["name"]: g for g in placement["groups"]}
    expansion_dict = expansion.to_dict()
    pod_groups = []
    for group in expansion_dict["podGroups"]:
        placed = by_name.get(group["name"])
        pod_groups.append({**group, "placement": None if placed is None else {
            "fits": placed["fits"],
            "short": short_placement(placed),
            "summary": strip_name(placed["message"], group["name"]),
            "domain": placed["domain"],
            "span": placed["span"],
        }})
    used = request.source if snapshot is None else "snapshot"
    topology = {
        "source": used,
        "description": source.description,
        "nodes": source.summary["nodes"],
        "keys": source.summary["keys"],
        "ageSeconds": source.age_seconds,
    }
    locality = quality(placement)
    return {
        "request": request.echo(),
        "policy": {"name": policy_name, "saved": saved},
        "podGroups": pod_groups,
        "expansion": {key: value for key, value in expansion_dict.items() if key != "podGroups"},
        "manifests": manifests,
        "yaml": yaml_text,
        "verdict": startup_verdict(verdict(placement), _startup_deadlocks(manifest, request)),
        "span": span(placement, expansion.composite),
        "fragmentation": fragmentation_items(placement),
        "quality": locality,
        "locality": quality_items(locality),
        "placement": placement,
        "heatmap": heatmap(source.heat, placement, expansion.composite),
        "topologySource": used,
        "topology": topology,
        "caveat": CAVEAT,
        "warnings": [
            *([UNSUPPORTED_API_WARNING] if request.api_version == API_V1ALPHA2 else []),
            *warnings,
            *expansion.warnings,
        ],
    }


def _startup_deadlocks(manifest: dict, request: PreviewRequest) -> list[str]:
    """Return the validator's startup-order deadlock messages for `manifest` (decision D8)."""
    # The cluster's DRAWorkloadResourceClaims gate (last status check): level-3 claims the cluster would drop are
    # named in the preview's warnings, as the validator names them.
    claims_gate = cluster_selectors.scheduling_facts().get("dra_claims_gate")
    report = validate_runtime(manifest, ValidationOptions(composite_enabled=request.composite,
                                                          dra_claims_gate=claims_gate))
    return [f"{p.path}: {p.message}" for p in report.startup_deadlocks]
