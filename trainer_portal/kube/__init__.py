"""The cluster gateway: the only package that talks to Kubernetes (and the only importer of ``kubernetes``).

Public interface::

    from trainer_portal import kube
    from trainer_portal.kube.client import get_gateway   # services, status checks and informers only

    gw = get_gateway()                           # the default cluster; lazy, cached; KubeNotConfigured if no config
    gw = gateway_for(connection)                 # one cluster (a kube.ClusterConnection, plain data)
    ctr = gw.resolve(kube.CLUSTER_TRAINING_RUNTIME)   # version decided by discovery
    gw.apply(ctr, body=manifest, dry_run=True)   # server-side apply, field manager "trainer-portal"
    gw.get(ctr, name="torch")                    # dict or None
    gw.list(kube.CORE_NODE)                      # ObjectList(items, resource_version)
    kube.Watcher(...)                            # list-then-watch with resume / relist on 410

Errors are :class:`KubeError` subclasses with a ``permanent`` flag (see ``errors.py``).

This face exports types, resource kinds and errors, which any layer may use. It does not export the gateway
factories (``get_gateway``, ``gateway_for``, ``build_gateway``, ``reset_gateway``): reaching the cluster goes through
``trainer_portal.kube.client``, which the import contracts let only services, status checks and informers import.
"""

from .client import AccessReview, Gateway, ObjectList, WatchEvent
from .config import ClusterConnection, ConnectionKind, KubeSettings, load_settings, settings_for
from .errors import (
    KubeCause,
    KubeConflict,
    KubeError,
    KubeExpired,
    KubeForbidden,
    KubeInvalid,
    KubeNotConfigured,
    KubeNotFound,
    KubeUnavailable,
)
from .resources import (
    CLUSTER_TRAINING_RUNTIME,
    CORE_NAMESPACE,
    CORE_NODE,
    CORE_POD,
    CRD,
    NODE,
    POD,
    PODGROUP,
    SCHEDULING_GROUP,
    SCHEDULING_VERSIONS,
    TRAINER_GROUP,
    TRAINER_VERSION,
    TRAINJOB,
    WORKER_PERMISSIONS,
    WORKLOAD,
    Resource,
    ResourceKind,
)
from .watch import Relist, Watcher, WatchStats, backoff_delay

__all__ = [
    "CLUSTER_TRAINING_RUNTIME",
    "CORE_NAMESPACE",
    "CORE_NODE",
    "CORE_POD",
    "CRD",
    "NODE",
    "POD",
    "PODGROUP",
    "SCHEDULING_GROUP",
    "SCHEDULING_VERSIONS",
    "TRAINER_GROUP",
    "TRAINER_VERSION",
    "TRAINJOB",
    "WORKER_PERMISSIONS",
    "WORKLOAD",
    "AccessReview",
    "ClusterConnection",
    "ConnectionKind",
    "Gateway",
    "KubeCause",
    "KubeConflict",
    "KubeError",
    "KubeExpired",
    "KubeForbidden",
    "KubeInvalid",
    "KubeNotConfigured",
    "KubeNotFound",
    "KubeSettings",
    "KubeUnavailable",
    "ObjectList",
    "Relist",
    "Resource",
    "ResourceKind",
    "WatchEvent",
    "WatchStats",
    "Watcher",
    "backoff_delay",
    "load_settings",
    "settings_for",
]
