"""The placement preview's pure half: the request (parsed and bounded once) and the view model of a result.

* `PreviewRequest` / `preview_request_parse`: the one description of the preview input. Every interface turns
  its input into this request through the parser (the API through its serializer, the HTML panel through its
  form mapping), so bounds and messages cannot differ between them; the limits below are the ones the API
  schema documents.
* The view model (`verdict`, `span`, `quality`, `fragmentation_items`, `heatmap`, …) turns a placement result
  into what the page and the API show. Pure functions over the result's JSON shape, tested without a database.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from runtimes.domain.constants import MAX_NUM_NODES, SCHEDULING_V1ALPHA2, SCHEDULING_V1BETA1
from runtimes.domain.labels import dns1123_label_problems
from runtimes.domain.numbers import parse_whole_number, shown
from runtimes.domain.placement_adapter import NO_POD_GROUP
from trainer_portal.errors import PortalError
from trainer_portal.errors import field as problem
from trainer_portal.placement.quantities import GPU, QuantityError, parse_resource


class PreviewInputError(PortalError):
    """The preview input is unusable. `.errors` is a list of `{"path", "message"}` dicts, one per problem."""

    code = "invalid"
    status = 400

    def __init__(self, errors: list[dict[str, str]]) -> None:
        self.errors = errors
        fields = [problem(e["path"], e["message"], e.get("code", "invalid")) for e in errors]
        if len(fields) == 1:
            first = fields[0]
            message = f"{first['path']}: {first['message']}" if first["path"] else first["message"]
        else:
            message = f"{len(fields)} problems in the request."
        super().__init__(message, fields=fields)

    def __str__(self) -> str:
        return "; ".join(f"{e['path']}: {e['message']}" if e["path"] else e["message"] for e in self.errors)


MAX_SYNTHETIC_NODES = 100_000


API_V1BETA1 = SCHEDULING_V1BETA1


API_V1ALPHA2 = SCHEDULING_V1ALPHA2


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


FRAGMENTATIONS: dict[str, str] = {
    "F0": "F0 · empty",
    "F1": "F1 · half the nodes partly used",
    "F2": "F2 · 90% of the nodes partly used",
    "F3": "F3 · half the racks full",
    "F4": "F4 · 1–3 GPUs used on every node",
    "F5": "F5 · near miss: best zone one pod short",
}


DEFAULT_RESOURCES: dict[str, str] = {GPU: "8", "cpu": "32", "memory": "256Gi"}


CAVEAT = (
    "The preview ignores inter-pod affinity, DRA claims, volume topology and scheduler plugins; "
    "real admission can differ (other admissions may race it, or a pod can fail after nomination)."
)


_RESOURCE_LIMITS: dict[str, tuple[int, str]] = {
    GPU: (4096, "4096"),
    "cpu": (1_000_000, "1000000"),
    "memory": (2**50, "1Pi"),
}


SYNTHETIC_BOUNDS: dict[str, tuple[int, int]] = {
    "zones": (1, 64),
    "blocksPerZone": (1, 256),
    "racksPerBlock": (1, 4096),
    "nodesPerRack": (1, 512),
    "gpusPerNode": (0, 64),
    "seed": (0, 2**31 - 1),
}


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


def _integer(value: object, path: str, low: int, high: int, errors: list[dict[str, str]]) -> int | None:
    """Return `value` as an int within [low, high], or None after appending a problem naming `path`."""
    number = parse_whole_number(value)
    if number is None:
        errors.append({
            "path": path, "message": f"must be a whole number from {low:,} to {high:,}; got {shown(value)}",
        })
        return None
    if not low <= number <= high:
        got = f"{number:,}" if abs(number) < 10**15 else f"a number of {len(str(abs(number)))} digits"
        errors.append({"path": path, "message": f"must be from {low:,} to {high:,}; got {got}"})
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
        pattern = fragmentation.strip().upper() if isinstance(fragmentation, str) else None
        if pattern not in FRAGMENTATIONS:
            errors.append({
                "path": "topology.fragmentation",
                "message": f"must be one of {', '.join(FRAGMENTATIONS)}; got {shown(fragmentation)}",
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


def preview_request_parse(data: Mapping[str, Any], *, live_available: bool) -> PreviewRequest:
    """Return the validated `PreviewRequest` for raw JSON-shaped input `data` (camelCase keys).

    Accepted keys: numNodes (required, 1..100,000), resourcesPerNode ({name: quantity}; GPUs in whole units),
    apiVersion (scheduling.k8s.io/v1beta1 | v1alpha2), composite (bool), trainJobName, and topology
    ({source: synthetic|live, zones, blocksPerZone, racksPerBlock, nodesPerRack, gpusPerNode, fragmentation F0–F5,
    seed}). `live_available` says whether a live snapshot exists (the live source is refused otherwise). Raises
    PreviewInputError listing every problem, each with the field path.
    """
    if not isinstance(data, Mapping):
        raise PreviewInputError([{"path": "", "message": "the request body must be a JSON object"}])
    errors: list[dict[str, str]] = []
    num_nodes = _integer(data.get("numNodes"), "numNodes", 1, MAX_NUM_NODES, errors)
    resources = _resources(data.get("resourcesPerNode"), errors)
    api_version = data.get("apiVersion") or API_V1BETA1
    if not isinstance(api_version, str) or api_version not in API_VERSIONS:
        errors.append({
            "path": "apiVersion",
            "message": f"must be one of {', '.join(API_VERSIONS)}; got {shown(api_version)}",
        })
        api_version = API_V1BETA1
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
    # The same default as the preview page: the live cluster whenever a snapshot of it exists.
    source = topology.get("source") or (SOURCE_LIVE if live_available else SOURCE_SYNTHETIC)
    if not isinstance(source, str) or source not in (SOURCE_SYNTHETIC, SOURCE_LIVE):
        errors.append({"path": "topology.source", "message": f"must be 'synthetic' or 'live'; got {shown(source)}"})
        source = SOURCE_SYNTHETIC
    elif source == SOURCE_LIVE and not live_available:
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
class HeatBase:
    """The request-independent part of a heat map, built once per snapshot summary.

    `racks[z][b]` holds one finished rack cell per rack with `placed` 0 and `near` False; a request replaces only
    the cells it touches, so a 3,000-rack map costs a pass of dictionary look-ups rather than 3,000 new dicts.
    """

    summary: dict
    racks: tuple[tuple[tuple[dict, ...], ...], ...]
    rack_count: int
    position: dict[tuple[str, str, str], tuple[int, int, int]]  # (zone, block, rack) → indexes into `racks`


def heat_base(summary: dict) -> HeatBase:
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
    return HeatBase(summary, racks, count, position)


def heatmap(base: HeatBase, placement: dict, composite: bool) -> dict:
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
    label = (f"Free GPUs of {counted(base.rack_count, 'rack')} in {counted(len(zones), 'zone')}: "
             f"{summary['freeGpus']:,} of {summary['totalGpus']:,} free; the proposed placement uses "
             f"{counted(placed_racks, 'rack')}.")
    return {"zones": zones, "rackCount": base.rack_count, "nodeCount": summary["nodes"], "placedRacks": placed_racks,
            "freeGpus": summary["freeGpus"], "totalGpus": summary["totalGpus"], "keys": summary["keys"],
            "label": label}


def counted(count: int, noun: str) -> str:
    """Return e.g. "1 node", "2,048 nodes" ("s" appended for any count but one)."""
    return f"{count:,} {noun}{'s' * (count != 1)}"


def short_placement(group: dict) -> str:
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


def strip_name(message: str, name: str) -> str:
    prefix = f"{name}: "
    return message[len(prefix):] if message.startswith(prefix) else message


def startup_verdict(result: dict, deadlocks: list[str]) -> dict:
    """Return the verdict `result` overridden for a policy whose gang can never reach minCount because of the
    dependsOn start order (JobSet creates a dependent ReplicatedJob only once its dependency is Ready/Complete): it
    never fits, whatever the capacity says. `deadlocks` are the lint messages (decision D8)."""
    if not deadlocks:
        return {**result, "startupDeadlock": False}
    capacity = "there would be room for it" if result["fits"] else "it would not fit either"
    return {
        "fits": False,
        "summary": f"The TrainJob {STARTUP_ORDER_VERDICT}: a gang waits for pods that are only created after it is "
        f"scheduled ({capacity}).",
        "explanation": [*deadlocks, *result["explanation"]],
        "bindingLevel": result["bindingLevel"],
        "startupDeadlock": True,
    }


def verdict(placement: dict) -> dict:
    """Return {fits, summary, explanation[lines], bindingLevel} for the whole TrainJob."""
    groups = placement["groups"]
    failing = [g for g in groups if not g["fits"] and g["policy"] == "gang"]
    lines: list[str] = []
    binding = None
    if not failing:
        gangs = [g for g in groups if g["kind"] == "PodGroup" and g["policy"] == "gang"]
        waiting = sum(g["podCount"] - g["placed"] for g in groups if g["policy"] == "basic")
        if waiting:
            summary = (f"The TrainJob starts partly: {counted(waiting, 'pod')} without gang scheduling cannot be "
                       "placed now and wait one by one for capacity.")
        elif len(gangs) > 1:
            summary = f"The TrainJob fits: all {len(gangs)} gang PodGroups can be admitted now."
        elif gangs:
            summary = "The TrainJob fits: its gang PodGroup can be admitted now."
        elif any(not g["name"].endswith(NO_POD_GROUP) for g in groups):
            summary = ("The TrainJob fits: every pod can be placed now. Its PodGroups are basic (no gang), so pods "
                       "start one by one as they are scheduled.")
        else:
            summary = ("The TrainJob fits: every pod can be placed now. It has no gang scheduling, so pods start one "
                       "by one as they are scheduled.")
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


def span(placement: dict, composite: bool) -> list[dict]:
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


def quality(placement: dict) -> list[dict]:
    """Return locality metrics (docs/reference/placement.md §8) per placed PodGroup of two or more pods.

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


def quality_items(quality: list[dict]) -> list[dict]:
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


def fragmentation_items(placement: dict) -> list[dict]:
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
