"""Placement preview (application service): inputs → validated request → expansion + snapshot + placement → result.

Interfaces (the HTML panel, the REST API) hand raw input (a JSON body, or form fields turned into the same shape
by `runtimes.preview_views.request_data_from_form`) to `preview_request_parse`, then call `preview_policy` (a saved
policy) or `preview_manifest` (an unsaved manifest). Both return a JSON-serialisable dict. Every problem with the
input is raised as `PreviewInputError`, whose `.errors` are `{path, message}` items naming the field and the fix.
A topology key that no node carries is not an input error: the verdict explains it.

Synthetic clusters are cached in-process (LRU keyed by their parameters), so that a user typing in the form does
not rebuild a 50,000-node snapshot on every keystroke.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from functools import lru_cache
from typing import Any

from django.conf import settings

from runtimes.domain.expansion import Expansion, ExpansionError, expand
from runtimes.domain.labels import dns1123_label_problems
from runtimes.domain.manifest import ManifestError, dump_many, load_runtime
from runtimes.domain.placement_adapter import job_requests, requests_from_expansion
from runtimes.domain.policy import ValidationOptions, validate_runtime
from runtimes.selectors import policy_get
from trainer_portal.placement.engine import PlacementInputError, PlacementRequest, place
from trainer_portal.placement.quantities import GPU, QuantityError, parse_resource
from trainer_portal.placement.snapshot import ClusterSnapshot, TopologyKeys, UnknownTopologyKey
from trainer_portal.placement.synthetic import synthetic_cluster

MAX_NUM_NODES = 100_000
# A 50,000-node synthetic snapshot with its heat-map summary retains ~12 MB (measured with tracemalloc); four
# parameter sets keep a user's back-and-forth typing warm without letting one process grow past ~50 MB.
SNAPSHOT_CACHE_SIZE = 4
MAX_SYNTHETIC_NODES = 100_000
API_V1BETA1 = "scheduling.k8s.io/v1beta1"
API_V1ALPHA2 = "scheduling.k8s.io/v1alpha2"
# Trainer v2.4 supports Kubernetes 1.37+ only ("Workload beta APIs requires v1.37+"); 1.36 stays for comparison.
NOT_SUPPORTED_BY_TRAINER = "not supported by Trainer v2.4"
API_VERSIONS: dict[str, str] = {
    API_V1BETA1: "Kubernetes 1.37 (scheduling.k8s.io/v1beta1)",
    API_V1ALPHA2: f"Kubernetes 1.36 (scheduling.k8s.io/v1alpha2) — {NOT_SUPPORTED_BY_TRAINER}",
}
UNSUPPORTED_API_WARNING = (
    f"Kubernetes 1.36 (scheduling.k8s.io/v1alpha2) is {NOT_SUPPORTED_BY_TRAINER}, which needs Kubernetes 1.37+: "
    "these are the objects a 1.36 cluster would take, for comparison only; choose 1.37 (scheduling.k8s.io/v1beta1) "
    "for what Trainer v2.4 creates"
)
STARTUP_ORDER_VERDICT = "never schedules on a real cluster (startup order)"
SOURCE_SYNTHETIC = "synthetic"
SOURCE_LIVE = "live"
# The synthetic generator's patterns (placement.md §6), labelled for the form.
FRAGMENTATIONS: dict[str, str] = {
    "F0": "F0 · empty",
    "F1": "F1 · half the nodes partly used",
    "F2": "F2 · 90% of the nodes partly used",
    "F3": "F3 · half the racks full",
    "F4": "F4 · 1–3 GPUs used on every node",
    "F5": "F5 · near miss: best zone one pod short",
}
DEFAULT_RESOURCES: dict[str, str] = {"nvidia.com/gpu": "8", "cpu": "32", "memory": "256Gi"}
CAVEAT = (
    "The preview ignores inter-pod affinity, DRA claims, volume topology and scheduler plugins; "
    "real admission can differ (other admissions may race it, or a pod can fail after nomination)."
)
# Per-node requests beyond these are typos (a node with 1 Pi of memory does not exist); refusing them also keeps
# every amount well inside the int64 arithmetic of the placement engine.
_RESOURCE_LIMITS: dict[str, tuple[int, str]] = {
    "nvidia.com/gpu": (4096, "4096"),
    "cpu": (1_000_000, "1000000"),
    "memory": (2**50, "1Pi"),
}
# Synthetic parameter bounds: wide enough for any real cluster shape, narrow enough to refuse a typo such as
# 1,000,000 racks per block that would allocate gigabytes.
SYNTHETIC_BOUNDS: dict[str, tuple[int, int]] = {
    "zones": (1, 64),
    "blocksPerZone": (1, 256),
    "racksPerBlock": (1, 4096),
    "nodesPerRack": (1, 512),
    "gpusPerNode": (0, 64),
    "seed": (0, 2**31 - 1),
}


class PreviewInputError(ValueError):
    """The preview input is unusable. `.errors` is a list of `{"path", "message"}` dicts, one per problem."""

    def __init__(self, errors: list[dict[str, str]]) -> None:
        self.errors = errors
        super().__init__("; ".join(f"{e['path']}: {e['message']}" if e["path"] else e["message"] for e in errors))


@dataclass(frozen=True)
class SyntheticTopology:
    """Parameters of a generated cluster: zones × blocks × racks × nodes × GPUs, fragmentation F0–F5, seed."""

    zones: int = 3
    blocks_per_zone: int = 8
    racks_per_block: int = 4
    nodes_per_rack: int = 16
    gpus_per_node: int = 8
    fragmentation: str = "F0"
    seed: int = 0

    @property
    def node_count(self) -> int:
        """Return the number of nodes the parameters describe."""
        return self.zones * self.blocks_per_zone * self.racks_per_block * self.nodes_per_rack


@dataclass(frozen=True)
class PreviewRequest:
    """A validated preview request (what to expand, and on which cluster)."""

    num_nodes: int
    resources_per_node: tuple[tuple[str, str], ...]
    api_version: str = API_V1BETA1
    composite: bool = False
    source: str = SOURCE_SYNTHETIC
    synthetic: SyntheticTopology = field(default_factory=SyntheticTopology)
    trainjob_name: str = "preview"

    def resources(self) -> dict[str, str]:
        """Return resourcesPerNode as a plain {resource name: quantity string} mapping."""
        return dict(self.resources_per_node)

    def echo(self) -> dict[str, Any]:
        """Return the request in its JSON input shape (camelCase), as the response echoes it back."""
        synthetic = asdict(self.synthetic)
        return {
            "numNodes": self.num_nodes,
            "resourcesPerNode": self.resources(),
            "apiVersion": self.api_version,
            "composite": self.composite,
            "trainJobName": self.trainjob_name,
            "topology": {
                "source": self.source,
                "zones": synthetic["zones"],
                "blocksPerZone": synthetic["blocks_per_zone"],
                "racksPerBlock": synthetic["racks_per_block"],
                "nodesPerRack": synthetic["nodes_per_rack"],
                "gpusPerNode": synthetic["gpus_per_node"],
                "fragmentation": synthetic["fragmentation"],
                "seed": synthetic["seed"],
            },
        }


# ------------------------------------------------------------------------------------------------ request parsing


def _integer(value: object, path: str, low: int, high: int, errors: list[dict[str, str]]) -> int | None:
    """Return `value` as an int within [low, high], or None after appending a problem naming `path`."""
    number: int | None = None
    if isinstance(value, bool):
        number = None
    elif isinstance(value, int):
        number = value
    elif isinstance(value, float) and value.is_integer():
        number = int(value)
    elif isinstance(value, str) and value.strip().lstrip("+-").isdigit():
        number = int(value.strip())
    if number is None:
        shown = "nothing" if value in (None, "") else repr(value)
        errors.append({"path": path, "message": f"must be a whole number from {low:,} to {high:,}; got {shown}"})
        return None
    if not low <= number <= high:
        shown = f"{number:,}" if abs(number) < 10**15 else f"a number of {len(str(abs(number)))} digits"
        errors.append({"path": path, "message": f"must be from {low:,} to {high:,}; got {shown}"})
        return None
    return number


def _boolean(value: object, path: str, errors: list[dict[str, str]]) -> bool:
    """Return `value` as a bool (JSON true/false, or the strings a form sends), appending a problem otherwise."""
    if isinstance(value, bool):
        return value
    if value is None or value == "":
        return False
    if isinstance(value, str) and value.strip().lower() in {"true", "on", "1", "yes", "false", "off", "0", "no"}:
        return value.strip().lower() in {"true", "on", "1", "yes"}
    errors.append({"path": path, "message": f"must be true or false; got {value!r}"})
    return False


def _resources(value: object, errors: list[dict[str, str]]) -> tuple[tuple[str, str], ...]:
    """Return resourcesPerNode as sorted (name, quantity) pairs; malformed quantities append problems."""
    if value is None:
        value = dict(DEFAULT_RESOURCES)
    if not isinstance(value, Mapping):
        errors.append({
            "path": "resourcesPerNode",
            "message": "must be an object of resource name to quantity, e.g. {\"nvidia.com/gpu\": \"8\", "
                       "\"cpu\": \"32\", \"memory\": \"256Gi\"}",
        })
        return ()
    pairs = []
    for name, quantity in value.items():
        path = f"resourcesPerNode.{name}"
        if not isinstance(name, str) or not name.strip():
            errors.append({"path": "resourcesPerNode", "message": f"resource names must be non-empty; got {name!r}"})
            continue
        if quantity is None or (isinstance(quantity, str) and not quantity.strip()):
            continue  # an empty form field means "this resource is not requested"
        try:
            amount = parse_resource(name, quantity, field=path)
        except QuantityError as error:
            errors.append({"path": path, "message": error.message})
            continue
        limit, shown = _RESOURCE_LIMITS.get(name, _RESOURCE_LIMITS["memory" if "/" not in name else GPU])
        if amount > limit:
            errors.append({"path": path, "message": f"{quantity!r} is more than any node offers; use at most {shown}"})
            continue
        pairs.append((name, str(quantity).strip()))
    return tuple(sorted(pairs))


def _synthetic(value: object, errors: list[dict[str, str]]) -> SyntheticTopology:
    """Return the synthetic-topology parameters in `value` (missing ones default), appending problems."""
    defaults = SyntheticTopology()
    if not isinstance(value, Mapping):
        return defaults
    names = {
        "zones": "zones",
        "blocksPerZone": "blocks_per_zone",
        "racksPerBlock": "racks_per_block",
        "nodesPerRack": "nodes_per_rack",
        "gpusPerNode": "gpus_per_node",
        "seed": "seed",
    }
    values: dict[str, Any] = {}
    for key, attribute in names.items():
        raw = value.get(key)
        if raw is None or raw == "":
            continue
        low, high = SYNTHETIC_BOUNDS[key]
        number = _integer(raw, f"topology.{key}", low, high, errors)
        if number is not None:
            values[attribute] = number
    fragmentation = value.get("fragmentation")
    if fragmentation not in (None, ""):
        pattern = str(fragmentation).strip().upper()
        if pattern not in FRAGMENTATIONS:
            errors.append({
                "path": "topology.fragmentation",
                "message": f"must be one of {', '.join(FRAGMENTATIONS)}; got {fragmentation!r}",
            })
        else:
            values["fragmentation"] = pattern
    topology = SyntheticTopology(**{**asdict(defaults), **values})
    if topology.node_count > MAX_SYNTHETIC_NODES:
        errors.append({
            "path": "topology",
            "message": f"zones × blocksPerZone × racksPerBlock × nodesPerRack is {topology.node_count:,} nodes; "
                       f"the synthetic cluster is limited to {MAX_SYNTHETIC_NODES:,}",
        })
    return topology


def preview_request_parse(data: Mapping[str, Any], *, live_available: bool | None = None) -> PreviewRequest:
    """Return the validated `PreviewRequest` for raw JSON-shaped input `data` (camelCase keys).

    Accepted keys: numNodes (required, 1..100,000), resourcesPerNode ({name: quantity}; GPUs in whole units),
    apiVersion (scheduling.k8s.io/v1beta1 | v1alpha2), composite (bool), trainJobName, and topology
    ({source: synthetic|live, zones, blocksPerZone, racksPerBlock, nodesPerRack, gpusPerNode, fragmentation F0–F5,
    seed}). Raises PreviewInputError listing every problem, each with the field path.
    """
    if not isinstance(data, Mapping):
        raise PreviewInputError([{"path": "", "message": "the request body must be a JSON object"}])
    errors: list[dict[str, str]] = []
    num_nodes = _integer(data.get("numNodes"), "numNodes", 1, MAX_NUM_NODES, errors)
    resources = _resources(data.get("resourcesPerNode"), errors)
    api_version = data.get("apiVersion") or API_V1BETA1
    if api_version not in API_VERSIONS:
        errors.append({
            "path": "apiVersion",
            "message": f"must be one of {', '.join(API_VERSIONS)}; got {api_version!r}",
        })
    composite = _boolean(data.get("composite"), "composite", errors)
    if composite and api_version == API_V1ALPHA2:
        errors.append({
            "path": "composite",
            "message": "composite PodGroups need Kubernetes 1.37 (scheduling.k8s.io/v1beta1 + v1alpha3); "
                       "switch apiVersion or turn composite off",
        })
    trainjob_name = data.get("trainJobName") or "preview"
    if not isinstance(trainjob_name, str) or dns1123_label_problems(trainjob_name):
        errors.append({"path": "trainJobName", "message": "must be a DNS-1123 label such as 'my-job'"})
    topology = data.get("topology") or {}
    if not isinstance(topology, Mapping):
        errors.append({"path": "topology", "message": "must be an object such as {\"source\": \"synthetic\"}"})
        topology = {}
    source = topology.get("source") or SOURCE_SYNTHETIC
    if source not in (SOURCE_SYNTHETIC, SOURCE_LIVE):
        errors.append({"path": "topology.source", "message": f"must be 'synthetic' or 'live'; got {source!r}"})
    elif source == SOURCE_LIVE and not (live_source_available() if live_available is None else live_available):
        errors.append({
            "path": "topology.source",
            "message": "no live cluster snapshot is available yet; use the synthetic source",
        })
    synthetic = _synthetic(topology, errors)
    if errors:
        raise PreviewInputError(errors)
    return PreviewRequest(
        num_nodes=num_nodes,
        resources_per_node=resources,
        api_version=api_version,
        composite=composite,
        source=source,
        synthetic=synthetic,
        trainjob_name=trainjob_name,
    )


# ------------------------------------------------------------------------------------------------ topology sources


def live_source_available() -> bool:
    """Return True when the worker has saved a live cluster snapshot (`trainer_portal.cluster.snapshots`)."""
    from trainer_portal.cluster import snapshots as topology

    return topology.live_source_available()


@dataclass(frozen=True)
class _Source:
    """A snapshot to place on, with its heat-map summary and how to describe it."""

    snapshot: ClusterSnapshot
    heat: _HeatBase
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
        f"synthetic: {topology.zones} zone{'s' * (topology.zones != 1)} × {topology.blocks_per_zone} blocks × "
        f"{topology.racks_per_block} racks × {topology.nodes_per_rack} nodes × {topology.gpus_per_node} GPUs "
        f"= {topology.node_count:,} nodes, {FRAGMENTATIONS[topology.fragmentation]}, seed {topology.seed}"
    )
    return _Source(snapshot, _heat_base(snapshot.to_summary()), description, None)


_live_heat: dict[tuple[int, int], _HeatBase] = {}


def _live_source() -> _Source:
    """Return the live cluster snapshot saved by the worker; raises PreviewInputError when there is none yet.

    The heat-map summary is kept for the current snapshot object and version, so typing does not redo it.
    """
    from trainer_portal.cluster import snapshots as topology

    live = topology.live_snapshot()
    if live is None:
        raise PreviewInputError([{"path": "topology.source", "message": "no live cluster snapshot has been "
                                                                        "collected yet; use the synthetic source"}])
    snapshot = live.snapshot
    stamp = (id(snapshot), snapshot.version)
    heat = _live_heat.get(stamp)
    if heat is None:
        heat = _heat_base(snapshot.to_summary())
        _live_heat.clear()  # only the current snapshot matters
        _live_heat[stamp] = heat
    server = f" {live.server}" if getattr(live, "server", "") else ""
    description = (f"live cluster{server}: {snapshot.node_count:,} nodes, snapshot {live.age_seconds:,.0f} s old "
                   f"({live.source})")
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


def _validation_warnings(manifest: dict, request: PreviewRequest) -> list[str]:
    """Return the validator's warnings for an unsaved manifest; raises PreviewInputError for its errors."""
    report = validate_runtime(manifest, ValidationOptions(composite_enabled=request.composite))
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


def _source(request: PreviewRequest, expansion: Expansion) -> _Source:
    """Return the snapshot source for `request`; the F5 pattern is shaped by the TrainJob's main gang."""
    if request.source == SOURCE_LIVE:
        return _live_source()
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


def _bucket(free: int, total: int) -> int:
    """Return the heat-map colour bucket of a domain: 0 (no GPU free) … 5 (all free); -1 when it has no GPUs."""
    if total <= 0:
        return -1
    if free <= 0:
        return 0
    if free >= total:
        return 5
    return min(4, 1 + (4 * free) // total)


@dataclass(frozen=True)
class _HeatBase:
    """The request-independent part of a heat map, built once per snapshot summary.

    `racks[z][b]` holds one finished rack cell per rack with `placed` 0 and `near` False; a request replaces only
    the cells it touches, so a 3,000-rack map costs a pass of dictionary look-ups rather than 3,000 new dicts.
    """

    summary: dict
    racks: tuple[tuple[tuple[dict, ...], ...], ...]
    rack_count: int
    position: dict[tuple[str, str, str], tuple[int, int, int]]  # (zone, block, rack) → indexes into `racks`


def _heat_base(summary: dict) -> _HeatBase:
    """Return the heat-map cells of `summary` (zone → block → rack), unplaced."""
    racks = tuple(
        tuple(
            tuple(
                {"name": rack["name"], "free": rack["freeGpus"], "total": rack["totalGpus"], "nodes": rack["nodes"],
                 "bucket": _bucket(rack["freeGpus"], rack["totalGpus"]), "placed": 0, "near": False}
                for rack in block["racks"]
            )
            for block in zone["blocks"]
        )
        for zone in summary["zones"]
    )
    count = sum(len(block) for zone in racks for block in zone)
    position = {
        (zone["name"], block["name"], rack["name"]): (z, b, r)
        for z, zone in enumerate(summary["zones"])
        for b, block in enumerate(zone["blocks"])
        for r, rack in enumerate(block["racks"])
    }
    return _HeatBase(summary, racks, count, position)


def _heatmap(base: _HeatBase, placement: dict, composite: bool) -> dict:
    """Return the zone → block → rack heat map: free/total GPUs per domain, pods placed, nearest misses.

    Racks are the finest cells (a 50,000-node cluster of 16-node racks gives 3,125 cells), so the picture stays
    small whatever the node count. `placed` counts pods the preview put there; `near` marks the best domain of a
    gang that does not fit. Untouched rack cells are shared with other results: treat the result as read-only.
    """
    groups = placement["groups"]
    sources = [g for g in groups if g["parent"] is None] if composite else groups
    placed: dict[tuple[str, ...], int] = {}
    for group in sources:
        for rack in group["racks"]:
            for key in ((rack["zone"],), (rack["zone"], rack["block"]), (rack["zone"], rack["block"], rack["rack"])):
                placed[key] = placed.get(key, 0) + rack["pods"]
    near: set[tuple[str, ...]] = set()
    for group in groups:
        if not group["fits"] and group["policy"] == "gang" and group["domain"] and group["domain"]["level"] != "host":
            near.add(tuple(group["domain"]["path"]))
    summary = base.summary
    changed: dict[tuple[int, int], list[dict]] = {}
    for key in {*(k for k in placed if len(k) == 3), *(k for k in near if len(k) == 3)}:
        where = base.position.get(key)
        if where is not None:
            z, b, r = where
            cells = changed.setdefault((z, b), list(base.racks[z][b]))
            cells[r] = {**cells[r], "placed": placed.get(key, 0), "near": key in near}
    zones = []
    for z, zone in enumerate(summary["zones"]):
        zone_key = (zone["name"],)
        blocks = []
        for b, block in enumerate(zone["blocks"]):
            block_key = (*zone_key, block["name"])
            blocks.append({"name": block["name"], "free": block["freeGpus"], "total": block["totalGpus"],
                           "nodes": block["nodes"], "placed": placed.get(block_key, 0), "near": block_key in near,
                           "racks": changed.get((z, b)) or list(base.racks[z][b])})
        zones.append({"name": zone["name"], "free": zone["freeGpus"], "total": zone["totalGpus"],
                      "nodes": zone["nodes"], "placed": placed.get(zone_key, 0), "near": zone_key in near,
                      "blocks": blocks})
    placed_racks = sum(1 for key, pods in placed.items() if len(key) == 3 and pods)
    label = (f"Free GPUs of {base.rack_count:,} racks in {len(zones)} zones: {summary['freeGpus']:,} of "
             f"{summary['totalGpus']:,} free; the proposed placement uses {placed_racks:,} racks.")
    return {"zones": zones, "rackCount": base.rack_count, "nodeCount": summary["nodes"], "placedRacks": placed_racks,
            "freeGpus": summary["freeGpus"], "totalGpus": summary["totalGpus"], "keys": summary["keys"],
            "label": label}


def _short_placement(group: dict) -> str:
    """Return a table-cell summary of one group's placement: "block b3 · 16 nodes" or "best rack r1: 15 of 16"."""
    domain = group["domain"]
    where = f"{domain['level']} {domain['value']}" if domain else "anywhere"
    if group["fits"]:
        nodes = group["span"]["nodes"]
        return f"{where} · {nodes:,} node{'s' * (nodes != 1)}" if nodes else where
    explanation = group["explanation"]
    if explanation and explanation["bestDomain"]:
        return f"best {explanation['bestDomain']}: {explanation['have']:,} of {explanation['need']:,}"
    return "no domain fits"


def _strip_name(message: str, name: str) -> str:
    prefix = f"{name}: "
    return message[len(prefix):] if message.startswith(prefix) else message


def _startup_verdict(verdict: dict, deadlocks: list[str]) -> dict:
    """Return `verdict` overridden for a policy whose gang can never reach minCount because of the dependsOn start
    order (JobSet creates a dependent ReplicatedJob only once its dependency is Ready/Complete): it never fits,
    whatever the capacity says."""
    if not deadlocks:
        return {**verdict, "startupDeadlock": False}
    capacity = "there would be room for it" if verdict["fits"] else "it would not fit either"
    return {
        "fits": False,
        "summary": f"The TrainJob {STARTUP_ORDER_VERDICT}: a gang waits for pods that are only created after it is "
        f"scheduled ({capacity}).",
        "explanation": [*deadlocks, *verdict["explanation"]],
        "bindingLevel": verdict["bindingLevel"],
        "startupDeadlock": True,
    }


def _verdict(placement: dict) -> dict:
    """Return {fits, summary, explanation[lines], bindingLevel} for the whole TrainJob."""
    groups = placement["groups"]
    failing = [g for g in groups if not g["fits"] and g["policy"] == "gang"]
    lines: list[str] = []
    binding = None
    if not failing:
        gangs = [g for g in groups if g["kind"] == "PodGroup"]
        if len(gangs) > 1:
            summary = f"The TrainJob fits: all {len(gangs)} PodGroups can be admitted now."
        elif gangs:
            summary = "The TrainJob fits: its PodGroup can be admitted now."
        else:
            summary = "The TrainJob fits: every pod can be placed now (it has no PodGroup)."
        lines = [g["message"] for g in groups if g["kind"] == "PodGroup" or g["parent"] is None]
        for group in groups:
            if group["policy"] == "basic" and group["placed"] < group["podCount"]:
                lines.append(group["message"])
    else:
        first = failing[0]
        summary = (f"The TrainJob does not fit: {len(failing)} gang{'s' * (len(failing) != 1)} cannot be admitted "
                   f"({', '.join(g['name'] for g in failing)}).")
        for group in failing:
            explanation = group["explanation"]
            if explanation:
                binding = binding or explanation["bindingLevel"]
                lines.append(explanation["message"])
                lines.extend(f"{group['name']}: {alt}" for alt in explanation["alternatives"][1:])
            else:
                lines.append(group["message"])
        if first["explanation"] is None and first["kind"] != "PodGroup":
            binding = binding or (first["domain"] or {}).get("level")
    return {"fits": not failing, "summary": summary, "explanation": lines, "bindingLevel": binding}


def _span(placement: dict, composite: bool) -> list[dict]:
    """Return the span of the whole placement as [{label, value}] (zones, blocks, racks, nodes used)."""
    groups = placement["groups"]
    sources = [g for g in groups if g["parent"] is None] if composite else groups
    racks = {(r["zone"], r["block"], r["rack"]) for g in sources for r in g["racks"]}
    nodes = {node for g in groups if g["kind"] == "PodGroup" or not composite for node in g["podsPerNode"]}
    if not racks:
        return []
    values = {"zones": len({r[0] for r in racks}), "blocks": len({r[:2] for r in racks}), "racks": len(racks),
              "nodes": len(nodes)}
    return [{"label": name if values[name] != 1 else name[:-1], "value": values[name]} for name in values]


def _pair_fraction(counts: list[int]) -> float:
    """Return Σ n(n−1) / (N(N−1)): the share of pod pairs that share a domain (1.0 for a single pod)."""
    total = sum(counts)
    if total < 2:
        return 1.0
    return sum(n * (n - 1) for n in counts) / (total * (total - 1))


def _quality(placement: dict) -> list[dict]:
    """Return locality metrics (placement.md §8) per placed PodGroup of two or more pods.

    Each item: group, pods, lca (lowest level all pods share: node, rack, block, zone or cluster), racksUsed,
    sameRackPairs / sameBlockPairs (share of pod pairs in one rack / block, an all-to-all locality proxy) and
    rackBalance (fewest / most pods over the racks used).
    """
    items = []
    for group in placement["groups"]:
        if group["kind"] != "PodGroup" or group["placed"] < 2:
            continue
        racks = group["racks"]
        per_rack = [rack["pods"] for rack in racks]
        per_block: dict[tuple[str, str], int] = {}
        for rack in racks:
            per_block[(rack["zone"], rack["block"])] = per_block.get((rack["zone"], rack["block"]), 0) + rack["pods"]
        span = group["span"]
        lca = next((level for level, key in (("node", "nodes"), ("rack", "racks"), ("block", "blocks"),
                                             ("zone", "zones")) if span[key] == 1), "cluster")
        items.append({
            "group": group["name"],
            "pods": group["placed"],
            "lca": lca,
            "racksUsed": len(racks),
            "sameRackPairs": round(_pair_fraction(per_rack), 4),
            "sameBlockPairs": round(_pair_fraction(list(per_block.values())), 4),
            "rackBalance": round(min(per_rack) / max(per_rack), 4) if per_rack else 1.0,
        })
    return items


def _quality_items(quality: list[dict]) -> list[dict]:
    """Return the locality of the largest placed group as [{label, value}] for the page."""
    if not quality:
        return []
    best = max(quality, key=lambda item: item["pods"])
    return [
        {"label": "all pods share one", "value": best["lca"]},
        {"label": "pod pairs in the same rack", "value": f"{best['sameRackPairs']:.0%}"},
        {"label": "pod pairs in the same block", "value": f"{best['sameBlockPairs']:.0%}"},
        {"label": "rack balance (fewest / most pods per rack)", "value": f"{best['rackBalance']:.0%}"},
    ]


def _fragmentation_items(placement: dict) -> list[dict]:
    """Return what the placement leaves behind as [{label, value}] (before → after), for the page."""
    before = placement["fragmentation"]["before"]
    after = placement["fragmentation"]["after"]
    if not before or not after:
        return []
    gpus = after["gpusPerPod"]
    shape = f"{gpus}-GPU pods" if gpus else "pods"
    items = [
        {"label": f"largest gang of {shape} per zone / block / rack",
         "value": " / ".join(f"{after['largestGang'][level]:,}" for level in ("zone", "block", "rack"))},
        {"label": "free GPUs", "value": f"{before['freeGpus']:,} → {after['freeGpus']:,}"},
        {"label": f"stranded GPUs (on nodes with fewer than {gpus} free)" if gpus else "stranded GPUs",
         "value": f"{before['strandedGpus']:,} → {after['strandedGpus']:,}"},
        {"label": "empty racks", "value": f"{before['emptyRacks']:,} → {after['emptyRacks']:,}"},
    ]
    return items


# ------------------------------------------------------------------------------------------------ entry points


def preview_policy(*, name: str, request: PreviewRequest, snapshot: ClusterSnapshot | None = None) -> dict:
    """Return the preview of saved policy `name` for `request` (see the module docstring for the shape).

    `snapshot` (a ClusterSnapshot) overrides the request's topology source, e.g. for a cluster page that already
    holds one. Raises PolicyNotFound when there is no such policy, PreviewInputError when the request cannot be
    previewed.
    """
    policy = policy_get(name=name)
    return _preview(policy.manifest, request, policy_name=policy.name, saved=True, warnings=[], snapshot=snapshot)


def preview_manifest(*, manifest: object, request: PreviewRequest, snapshot: ClusterSnapshot | None = None) -> dict:
    """Return the preview of an unsaved runtime `manifest` (an object, or YAML/JSON text) for `request`.

    The manifest is validated first; its errors are raised as PreviewInputError with paths under `manifest.`,
    its warnings are returned in the result. Nothing is saved. `snapshot` as for `preview_policy`.
    """
    runtime = _manifest_object(manifest)
    warnings = _validation_warnings(runtime, request)
    metadata = runtime.get("metadata") if isinstance(runtime.get("metadata"), dict) else {}
    name = metadata.get("name") if isinstance(metadata.get("name"), str) else ""
    return _preview(runtime, request, policy_name=name, saved=False, warnings=warnings, snapshot=snapshot)


def _preview(manifest: dict, request: PreviewRequest, *, policy_name: str, saved: bool, warnings: list[str],
             snapshot: ClusterSnapshot | None = None) -> dict:

    expansion = _expand(manifest, request)
    if snapshot is not None:
        source = _Source(snapshot, _heat_base(snapshot.to_summary()), f"given snapshot: {snapshot.node_count:,} nodes",
                         None)
    else:
        source = _source(request, expansion)
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
            "short": _short_placement(placed),
            "summary": _strip_name(placed["message"], group["name"]),
            "domain": placed["domain"],
            "span": placed["span"],
        }})
    topology = {
        "source": request.source,
        "description": source.description,
        "nodes": source.summary["nodes"],
        "keys": source.summary["keys"],
        "ageSeconds": source.age_seconds,
    }
    quality = _quality(placement)
    return {
        "request": request.echo(),
        "policy": {"name": policy_name, "saved": saved},
        "podGroups": pod_groups,
        "expansion": {key: value for key, value in expansion_dict.items() if key != "podGroups"},
        "manifests": manifests,
        "yaml": yaml_text,
        "verdict": _startup_verdict(_verdict(placement), _startup_deadlocks(manifest, request)),
        "span": _span(placement, expansion.composite),
        "fragmentation": _fragmentation_items(placement),
        "quality": quality,
        "locality": _quality_items(quality),
        "placement": placement,
        "heatmap": _heatmap(source.heat, placement, expansion.composite),
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
    report = validate_runtime(manifest, ValidationOptions(composite_enabled=request.composite))
    return [f"{p.path}: {p.message}" for p in report.startup_deadlocks]
