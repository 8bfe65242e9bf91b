"""Input and output shapes of the runtime-policy REST API (camelCase JSON, like the Kubernetes objects it carries).

Input serializers only check types and sizes; every rule about the manifest lives in the domain validator, which
the services call. Output serializers are read-only views of model rows and service results.
"""

from __future__ import annotations

from typing import Any

from django.urls import NoReverseMatch, reverse
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from runtimes.choices import POLICY_ORDERINGS, ClusterState, ImportMode, SyncState
from runtimes.domain.manifest import MAX_DEPTH
from runtimes.domain.numbers import parse_whole_number
from runtimes.domain.policy import scheduling_summary
from runtimes.domain.status import SYNC_STATUSES
from runtimes.services.policies import MAX_MESSAGE_LENGTH

# The error body is the project's (one component for every endpoint); re-exported for the views that name it.
from trainer_portal.api.schema import ErrorBodySerializer, ErrorFieldSerializer, ErrorSerializer  # noqa: F401

# PostgreSQL integer columns: larger numbers could never match and would fail the query.
MAX_NUMBER = 2**31 - 1


class WholeNumberField(serializers.IntegerField):
    """An integer field held to the portal's one number rule (`runtimes.domain.numbers`): JSON integers and ASCII
    digit strings only; floats (even 2.0), booleans and look-alike digits ("٣", "²") are refused."""

    def to_internal_value(self, data):
        number = parse_whole_number(data)
        if number is None:
            self.fail("invalid")
        return super().to_internal_value(number)


# --------------------------------------------------------------------------------------------------- helpers


def _username(user: Any) -> str | None:
    return user.get_username() if user is not None else None


def _absolute(request: Any, path: str) -> str:
    return request.build_absolute_uri(path) if request is not None else path


def _depth(value: Any) -> int:
    """Return how deeply `value` nests (iteratively, so absurd nesting cannot exhaust the stack)."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, level = stack.pop()
        deepest = max(deepest, level)
        if level > MAX_DEPTH:
            break
        if isinstance(item, dict):
            stack.extend((child, level + 1) for child in item.values())
        elif isinstance(item, list):
            stack.extend((child, level + 1) for child in item)
    return deepest


@extend_schema_field(
    {
        "type": "object",
        "additionalProperties": True,
        "description": "A trainer.kubeflow.org/v1alpha1 ClusterTrainingRuntime manifest (apiVersion, kind, metadata, "
        "spec).",
    }
)
class ManifestField(serializers.JSONField):
    """A Kubernetes object: must be a JSON object; everything else is left to the domain validator."""

    default_error_messages = {
        "not_object": "Must be a JSON object (the ClusterTrainingRuntime: apiVersion, kind, metadata, spec), "
        "not {kind}.",
        "too_deep": "Is nested deeper than {limit} levels; no ClusterTrainingRuntime is.",
    }

    def to_internal_value(self, data: Any) -> Any:
        if _depth(data) > MAX_DEPTH:
            # Checked before JSONField's json.dumps, which would recurse into it.
            self.fail("too_deep", limit=MAX_DEPTH)
        value = super().to_internal_value(data)
        if not isinstance(value, dict):
            kind = "a list" if isinstance(value, list) else ("null" if value is None else type(value).__name__)
            self.fail("not_object", kind=kind)
        return value


class TextField(serializers.CharField):
    """A string, and only a string: numbers and booleans are refused rather than silently turned into text."""

    default_error_messages = {"not_string": "Must be a string, not {kind}."}

    def to_internal_value(self, data: Any) -> str:
        if not isinstance(data, str):
            self.fail("not_string", kind="null" if data is None else type(data).__name__)
        return super().to_internal_value(data)


# --------------------------------------------------------------------------------------------------- common


class ProblemSerializer(serializers.Serializer):
    """One validation problem."""

    path = serializers.CharField(
        help_text="Where in the request body, e.g. manifest.spec.mlPolicy.numNodes (spec.mlPolicy.numNodes when "
        "the manifest was the whole body), as in the error fields of create and update."
    )
    manifestPath = serializers.CharField(required=False, help_text="Where in the manifest: spec.mlPolicy.numNodes.")
    message = serializers.CharField()
    severity = serializers.ChoiceField(choices=["error", "warning"])
    code = serializers.CharField()


# --------------------------------------------------------------------------------------------------- policies


class SchedulingSerializer(serializers.Serializer):
    mode = serializers.CharField(help_text="none, level1, level2, level3, mixed, composite, coscheduling, volcano")
    summary = serializers.CharField()
    levels = serializers.ListField(child=serializers.IntegerField(), help_text="Scheduling levels in use (1–3).")


class SyncSerializer(serializers.Serializer):
    status = serializers.ChoiceField(
        choices=list(SYNC_STATUSES), help_text="Desired vs applied: `synced` only when the current revision is applied."
    )
    label = serializers.CharField(help_text='At a glance, e.g. "Out of sync (revision 3 not applied)".')
    state = serializers.ChoiceField(choices=SyncState.choices, help_text="The sync state machine's own state.")
    appliedRevision = serializers.IntegerField(allow_null=True)
    resourceVersion = serializers.CharField(allow_blank=True)
    lastSyncedAt = serializers.DateTimeField(allow_null=True)
    error = serializers.CharField(allow_blank=True)
    clusters = serializers.CharField(help_text='The target clusters at a glance, e.g. "synced on 2 of 2 clusters" or '
                                     '"synced on 1 of 2 clusters; drifted on gpu-west".')


class PolicyClusterSerializer(serializers.Serializer):
    status = serializers.ChoiceField(
        choices=ClusterState.choices, help_text="What the cluster holds, as last seen by an apply or a drift check."
    )
    label = serializers.CharField()


def sync_data(policy) -> dict[str, Any]:
    """Return a policy's sync facts as the API shows them (`sync` of a policy)."""
    status = policy.sync_status
    return {
        "status": status.code,
        "label": status.label,
        "state": policy.sync_state,
        "appliedRevision": policy.applied_revision,
        "resourceVersion": policy.applied_resource_version,
        "lastSyncedAt": serializers.DateTimeField().to_representation(policy.last_synced_at)
        if policy.last_synced_at
        else None,
        "error": policy.last_sync_error,
        "clusters": policy.clusters_summary,
    }


class PolicyClusterSyncSerializer(serializers.Serializer):
    """Where a policy stands on one of its target clusters (its own sync state machine there)."""

    cluster = serializers.CharField(help_text="The cluster's name.")
    displayName = serializers.CharField(allow_blank=True)
    isDefault = serializers.BooleanField()
    syncState = serializers.ChoiceField(choices=SyncState.choices, help_text="The sync state machine on this cluster.")
    # Plain strings: a second component with these choice sets would make drf-spectacular's enum naming collide.
    status = serializers.CharField(
        help_text=f"Desired vs applied on this cluster: one of {', '.join(SYNC_STATUSES)}, or `drifted` when the live "
        "object differs from the applied (current) revision.",
    )
    label = serializers.CharField()
    appliedRevision = serializers.IntegerField(allow_null=True, help_text="Revision live on this cluster.")
    requestedRevision = serializers.IntegerField(allow_null=True, help_text="Revision last queued for this cluster.")
    clusterState = serializers.CharField(
        help_text=f"What this cluster holds, as last seen by an apply or a check: one of "
        f"{', '.join(ClusterState.values)}.",
    )
    drift = serializers.BooleanField(help_text="The live object on this cluster differs from the applied revision.")
    driftDiff = serializers.CharField(allow_blank=True, help_text="Unified diff portal → this cluster when drifted.")
    error = serializers.CharField(allow_blank=True, help_text="Why the last sync to this cluster failed.")
    errorFields = serializers.ListField(child=serializers.DictField(), help_text="The fields this cluster named.")
    lastSyncedAt = serializers.DateTimeField(allow_null=True)
    resourceVersion = serializers.CharField(allow_blank=True)
    generation = serializers.IntegerField(allow_null=True)
    startupDeadlockConfirmed = serializers.BooleanField()


def cluster_sync_rows(policy) -> list[dict[str, Any]]:
    """Return the policy's per-cluster sync rows as the API shows them (`clusters` of a policy)."""
    from runtimes import selectors

    return [
        {
            "cluster": row["cluster"],
            "displayName": row["display_name"],
            "isDefault": row["is_default"],
            "syncState": row["state"],
            "status": row["status"],
            "label": row["label"],
            "appliedRevision": row["applied_revision"],
            "requestedRevision": row["requested_revision"],
            "clusterState": row["cluster_state"],
            "drift": row["drifted"],
            "driftDiff": row["drift_diff"],
            "error": row["error"],
            "errorFields": row["error_fields"],
            "lastSyncedAt": row["last_synced_at"].isoformat() if row["last_synced_at"] else None,
            "resourceVersion": row["resource_version"],
            "generation": row["generation"],
            "startupDeadlockConfirmed": row["startup_deadlock_confirmed"],
        }
        for row in selectors.policy_cluster_rows(policy=policy)
    ]


def cluster_data(policy) -> dict[str, str]:
    """Return a policy's cluster facts as the API shows them (`cluster` of a policy)."""
    return {"status": policy.cluster_state, "label": policy.get_cluster_state_display()}


class PolicyUrlsSerializer(serializers.Serializer):
    self = serializers.URLField()
    html = serializers.URLField(allow_null=True)
    export = serializers.URLField()
    revisions = serializers.URLField()
    diff = serializers.URLField()
    rollback = serializers.URLField()
    sync = serializers.URLField(allow_null=True, help_text="Cluster sync (null when sync is not installed).")
    preview = serializers.URLField(allow_null=True, help_text="Placement preview (null when not installed).")


class PolicyOutputSerializer(serializers.Serializer):
    """A policy as the API returns it."""

    name = serializers.CharField()
    version = serializers.IntegerField(help_text="Send it back (body `version` or `If-Match`) when you write.")
    framework = serializers.CharField(allow_blank=True)
    scheduling = serializers.SerializerMethodField()
    manifest = ManifestField()
    warnings = ProblemSerializer(many=True)
    createdAt = serializers.DateTimeField(source="created_at")
    updatedAt = serializers.DateTimeField(source="updated_at")
    createdBy = serializers.SerializerMethodField()
    updatedBy = serializers.SerializerMethodField()
    sync = serializers.SerializerMethodField(
        help_text="The policy-wide sync view over its target clusters (with one cluster: that cluster's)."
    )
    cluster = serializers.SerializerMethodField(
        help_text="What the target clusters hold, the most urgent first (missing, drifted, not applied, matches)."
    )
    clusters = serializers.SerializerMethodField(help_text="Where the policy stands on each target cluster.")
    targetClusters = serializers.SerializerMethodField(
        help_text="The clusters chosen for this policy; empty = every enabled cluster."
    )
    urls = serializers.SerializerMethodField()

    @extend_schema_field(SchedulingSerializer)
    def get_scheduling(self, policy) -> dict[str, Any]:
        summary = scheduling_summary(policy.manifest)
        return {"mode": policy.scheduling_mode, "summary": policy.scheduling_summary, "levels": list(summary.levels)}

    def get_createdBy(self, policy) -> str | None:
        return _username(policy.created_by)

    def get_updatedBy(self, policy) -> str | None:
        return _username(policy.updated_by)

    @extend_schema_field(SyncSerializer)
    def get_sync(self, policy) -> dict[str, Any]:
        return sync_data(policy)

    @extend_schema_field(PolicyClusterSerializer)
    def get_cluster(self, policy) -> dict[str, str]:
        return cluster_data(policy)

    @extend_schema_field(PolicyClusterSyncSerializer(many=True))
    def get_clusters(self, policy) -> list[dict[str, Any]]:
        return cluster_sync_rows(policy)

    @extend_schema_field(serializers.ListField(child=serializers.CharField()))
    def get_targetClusters(self, policy) -> list[str]:
        return sorted(cluster.name for cluster in policy.target_clusters.all())

    @extend_schema_field(PolicyUrlsSerializer)
    def get_urls(self, policy) -> dict[str, str | None]:
        request = self.context.get("request")
        name = policy.name

        def optional(route: str) -> str | None:
            # Routes owned by other features; absent in a build without them.
            try:
                return _absolute(request, reverse(route, args=[name]))
            except NoReverseMatch:
                return None

        return {
            "self": _absolute(request, reverse("api-runtime-detail", args=[name])),
            "html": optional("runtimes:detail"),
            "export": _absolute(request, reverse("api-runtime-export", args=[name])),
            "revisions": _absolute(request, reverse("api-runtime-revisions", args=[name])),
            "diff": _absolute(request, reverse("api-runtime-diff", args=[name])),
            "rollback": _absolute(request, reverse("api-runtime-rollback", args=[name])),
            "sync": optional("api-runtime-sync"),
            "preview": optional("api-runtime-preview"),
        }


class PolicyFilterSerializer(serializers.Serializer):
    """Query parameters of the list endpoint."""

    search = serializers.CharField(required=False, allow_blank=True, default="", max_length=200)
    framework = serializers.CharField(required=False, allow_blank=True, default="", max_length=63)
    scheduling_mode = serializers.CharField(required=False, allow_blank=True, default="", max_length=32)
    sync_state = serializers.ChoiceField(choices=[("", "any"), *SyncState.choices], required=False, default="")
    sync_status = serializers.ChoiceField(
        choices=[("", "any"), *SYNC_STATUSES.items()], required=False, default="",
        help_text="Desired vs applied (`out_of_sync`: the current revision is not the applied one).",
    )
    cluster_status = serializers.ChoiceField(
        choices=[("", "any"), *ClusterState.choices], required=False, default="",
        help_text="What the cluster holds (`drifted`, `missing`, …).",
    )
    ordering = serializers.ChoiceField(choices=list(POLICY_ORDERINGS), required=False, default="name")


EXPORT_FORMATS = ("yaml", "json")


class PolicyExportQuerySerializer(PolicyFilterSerializer):
    """Query parameters of the bulk export: the list's filters and the output format."""

    format = serializers.ChoiceField(
        choices=list(EXPORT_FORMATS),
        required=False,
        default="yaml",
        help_text="yaml: one `---`-separated stream (application/yaml); json: a v1 `List` of the manifests "
        "(application/json). Both import as they are, and `kubectl apply --server-side -f` takes both.",
    )


class PolicyExportListSerializer(serializers.Serializer):
    """The JSON bulk export: a Kubernetes `v1 List` (what `kubectl get -o json` writes for many objects)."""

    # Plain strings: an enum of one value would collide with the preview's apiVersion enum in generated names.
    apiVersion = serializers.CharField(help_text="v1")
    kind = serializers.CharField(help_text="List")
    items = serializers.ListField(child=ManifestField(), help_text="The policies' manifests, in list order.")


class PolicyCreateSerializer(serializers.Serializer):
    """Body of POST /runtimes/ (JSON). A YAML body (`Content-Type: application/yaml`) is the manifest itself."""

    manifest = ManifestField()
    message = TextField(required=False, allow_blank=True, default="", max_length=MAX_MESSAGE_LENGTH)


class MessageQuerySerializer(serializers.Serializer):
    """`?message=` of the YAML-body writes: the revision message, held to the same rules as in a JSON body."""

    message = TextField(required=False, allow_blank=True, default="", max_length=MAX_MESSAGE_LENGTH)


class PolicyUpdateSerializer(serializers.Serializer):
    """Body of PUT /runtimes/{name}/: the whole new manifest and the version it was based on."""

    manifest = ManifestField()
    version = WholeNumberField(
        required=False,
        min_value=1,
        max_value=MAX_NUMBER,
        help_text='The version you read; or send If-Match: "<version>".',
    )
    message = TextField(required=False, allow_blank=True, default="", max_length=MAX_MESSAGE_LENGTH)


class PolicyPatchSerializer(serializers.Serializer):
    """Body of PATCH /runtimes/{name}/: a JSON merge patch (RFC 7396) applied to the current manifest."""

    manifest = ManifestField(help_text="Merge patch: objects merge, null deletes a key, other values replace.")
    version = WholeNumberField(required=False, min_value=1, max_value=MAX_NUMBER)
    message = TextField(required=False, allow_blank=True, default="", max_length=MAX_MESSAGE_LENGTH)


class VersionSerializer(serializers.Serializer):
    """Optional body (or query) of DELETE: the version you read."""

    version = WholeNumberField(required=False, min_value=1, max_value=MAX_NUMBER)


class RollbackSerializer(serializers.Serializer):
    """Body of POST /runtimes/{name}/rollback/."""

    revision = WholeNumberField(
        min_value=1, max_value=MAX_NUMBER, help_text="The revision whose manifest becomes current again."
    )
    version = WholeNumberField(
        required=False, min_value=1, max_value=MAX_NUMBER, help_text="The current version you read."
    )


# --------------------------------------------------------------------------------------------------- import, validate


class ImportRequestSerializer(serializers.Serializer):
    """JSON body of POST /runtimes/import/ (a YAML body is the text itself)."""

    text = TextField(
        trim_whitespace=False, help_text="YAML (one or many documents, or a List) or JSON of ClusterTrainingRuntimes."
    )
    message = TextField(required=False, allow_blank=True, default="", max_length=MAX_MESSAGE_LENGTH)
    mode = serializers.ChoiceField(choices=ImportMode.choices, required=False)


class ImportDocumentSerializer(serializers.Serializer):
    document = serializers.IntegerField(help_text="0-based index of the runtime in the input.")
    name = serializers.CharField()
    line = serializers.IntegerField(allow_null=True, help_text="Line where the document starts (YAML only).")
    action = serializers.ChoiceField(choices=["created", "updated", "unchanged"])
    warnings = ProblemSerializer(many=True, source="problems")


class ImportResultSerializer(serializers.Serializer):
    created = serializers.ListField(child=serializers.CharField())
    updated = serializers.ListField(child=serializers.CharField())
    unchanged = serializers.ListField(child=serializers.CharField())
    documents = ImportDocumentSerializer(many=True)


class ValidateRequestSerializer(serializers.Serializer):
    """JSON body of POST /runtimes/validate/: a manifest object or YAML/JSON text (exactly one)."""

    manifest = ManifestField(required=False)
    text = TextField(required=False, trim_whitespace=False)

    def validate(self, attrs: dict) -> dict:
        if ("manifest" in attrs) == ("text" in attrs):
            raise serializers.ValidationError(
                {"manifest": "Send exactly one of `manifest` (an object) or `text` (YAML or JSON)."}
            )
        return attrs


class ValidationProblemSerializer(ProblemSerializer):
    line = serializers.IntegerField(required=False, allow_null=True)
    column = serializers.IntegerField(required=False, allow_null=True)


class ValidateResponseSerializer(serializers.Serializer):
    ok = serializers.BooleanField(help_text="True when there are no errors (warnings do not block saving).")
    errors = ValidationProblemSerializer(many=True)
    warnings = ValidationProblemSerializer(many=True)
    scheduling = SchedulingSerializer(allow_null=True)


# --------------------------------------------------------------------------------------------------- revisions


class RevisionOutputSerializer(serializers.Serializer):
    """One revision in a history list."""

    number = serializers.IntegerField()
    message = serializers.CharField(allow_blank=True)
    source = serializers.CharField()
    author = serializers.CharField(source="author_name", allow_blank=True)
    createdAt = serializers.DateTimeField(source="created_at")
    current = serializers.SerializerMethodField()

    def get_current(self, revision) -> bool:
        return revision.number == self.context["policy"].version


class RevisionDetailSerializer(RevisionOutputSerializer):
    """One revision with its full manifest."""

    manifest = ManifestField()


class DiffQuerySerializer(serializers.Serializer):
    from_ = WholeNumberField(
        required=False, min_value=1, max_value=MAX_NUMBER, help_text="Defaults to the previous revision."
    )
    to = WholeNumberField(
        required=False, min_value=1, max_value=MAX_NUMBER, help_text="Defaults to the current revision."
    )

    def get_fields(self):
        fields = super().get_fields()
        fields["from"] = fields.pop("from_")
        return fields


class ChangeSerializer(serializers.Serializer):
    """One structural change: the field path, added/removed/changed, and the old and new values."""

    path = serializers.CharField(help_text="e.g. spec.template.spec.replicatedJobs[name=node].replicas")
    op = serializers.ChoiceField(choices=["added", "removed", "changed"])
    old = serializers.JSONField(allow_null=True)
    new = serializers.JSONField(allow_null=True)


class DiffOutputSerializer(serializers.Serializer):
    name = serializers.CharField()
    fromRevision = serializers.IntegerField()
    toRevision = serializers.IntegerField()
    unified = serializers.CharField(allow_blank=True, help_text="Unified diff of the two manifests as YAML.")
    changes = ChangeSerializer(many=True)
