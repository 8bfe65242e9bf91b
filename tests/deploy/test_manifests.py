"""The Kubernetes manifests (deploy/kubernetes): every overlay renders with kubectl's kustomize, every object is valid
against the Kubernetes 1.37 schemas, every pod meets the Pod Security "restricted" profile, and the RBAC granted is
exactly what the code declares."""

from __future__ import annotations

import io
import shutil
import subprocess
from pathlib import Path

import kubernetes_validate
import pytest
import yaml
from django.core.management import call_command

from trainer_portal.kube.rbac import portal_rbac

ROOT = Path(__file__).resolve().parents[2] / "deploy" / "kubernetes"
OVERLAYS = ("production", "trial")
KUBERNETES_VERSION = "1.37.0"
# Kinds whose schemas are not part of Kubernetes (checked for shape below instead).
CUSTOM_KINDS = {"ServiceMonitor", "PodMonitor", "PrometheusRule"}
POD_KINDS = {"Deployment", "StatefulSet", "Job", "DaemonSet"}


def render(overlay: str) -> list[dict]:
    """Return the objects ``kubectl kustomize`` renders for an overlay (fails the test when it cannot render)."""
    kubectl = shutil.which("kubectl")
    assert kubectl, "kubectl is installed by scripts/ensure-system-deps"
    out = subprocess.run([kubectl, "kustomize", str(ROOT / "overlays" / overlay)], capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 0, out.stderr
    return [doc for doc in yaml.safe_load_all(out.stdout) if doc]


@pytest.fixture(scope="module", params=OVERLAYS)
def rendered(request) -> tuple[str, list[dict]]:
    return request.param, render(request.param)


def by_kind(objects: list[dict], kind: str) -> list[dict]:
    return [obj for obj in objects if obj["kind"] == kind]


def named(objects: list[dict], kind: str, name: str) -> dict:
    matches = [obj for obj in by_kind(objects, kind) if obj["metadata"]["name"] == name]
    assert len(matches) == 1, f"{kind}/{name}: {len(matches)} found"
    return matches[0]


def test_every_object_is_valid_against_the_kubernetes_schemas(rendered):
    overlay, objects = rendered
    checked = 0
    for obj in objects:
        if obj["kind"] in CUSTOM_KINDS:
            continue
        kubernetes_validate.validate(obj, KUBERNETES_VERSION, strict=True)
        checked += 1
    assert checked >= 15, f"{overlay}: only {checked} objects rendered"


def test_every_pod_meets_the_restricted_profile_and_has_limits(rendered):
    overlay, objects = rendered
    workloads = [obj for obj in objects if obj["kind"] in POD_KINDS]
    assert workloads
    for obj in workloads:
        where = f"{overlay}: {obj['kind']}/{obj['metadata']['name']}"
        pod = obj["spec"]["template"]["spec"]
        security = pod.get("securityContext", {})
        assert security.get("runAsNonRoot") is True, where
        assert security.get("seccompProfile", {}).get("type") == "RuntimeDefault", where
        for key in ("hostNetwork", "hostPID", "hostIPC"):
            assert not pod.get(key), where
        assert not any("hostPath" in volume for volume in pod.get("volumes", [])), where
        for container in pod["containers"] + pod.get("initContainers", []):
            ctx = container.get("securityContext", {})
            assert ctx.get("allowPrivilegeEscalation") is False, where
            assert ctx.get("readOnlyRootFilesystem") is True, where
            assert ctx.get("capabilities", {}).get("drop") == ["ALL"], where
            assert not ctx.get("capabilities", {}).get("add"), where
            assert not ctx.get("privileged"), where
            resources = container.get("resources", {})
            for part in ("requests", "limits"):
                assert {"cpu", "memory"} <= set(resources.get(part, {})), f"{where}: {part}"
            # A read-only root filesystem needs a writable /tmp.
            assert any(mount["mountPath"] == "/tmp" for mount in container.get("volumeMounts", [])), where


def test_only_pods_that_talk_to_the_cluster_mount_a_token(rendered):
    _, objects = rendered
    for obj in objects:
        if obj["kind"] not in POD_KINDS:
            continue
        pod = obj["spec"]["template"]["spec"]
        component = obj["metadata"]["labels"].get("app.kubernetes.io/component")
        # live renders the same fragments as web, RBAC namespace visibility included.
        talks_to_cluster = component in {"web", "live", "worker", "cluster-watch"}
        assert pod.get("automountServiceAccountToken") is talks_to_cluster, obj["metadata"]["name"]
        if talks_to_cluster:
            assert pod["serviceAccountName"] == "trainer-portal-controller"
    for account in by_kind(objects, "ServiceAccount"):
        assert account.get("automountServiceAccountToken") is False


def test_the_shape_operators_rely_on(rendered):
    overlay, objects = rendered
    web = named(objects, "Deployment", "trainer-portal-web")
    assert web["spec"]["replicas"] >= 2
    container = web["spec"]["template"]["spec"]["containers"][0]
    assert {"readinessProbe", "livenessProbe", "startupProbe"} <= set(container)
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert named(objects, "PodDisruptionBudget", "trainer-portal-web")["spec"]["minAvailable"] >= 1
    beat = named(objects, "Deployment", "trainer-portal-beat")
    assert beat["spec"]["replicas"] == 1 and beat["spec"]["strategy"]["type"] == "Recreate"
    watch = named(objects, "Deployment", "trainer-portal-cluster-watch")
    assert watch["spec"]["replicas"] == 2
    probe = watch["spec"]["template"]["spec"]["containers"][0]["livenessProbe"]["exec"]["command"]
    assert probe[:4] == ["python", "manage.py", "process_alive", "cluster-watch"]
    assert named(objects, "Job", "trainer-portal-migrate")
    wait = web["spec"]["template"]["spec"]["initContainers"][0]["command"]
    assert "manage.py migrate --check" in wait[-1]  # web serves only a migrated schema
    assert named(objects, "Service", "trainer-portal-web") and named(objects, "Ingress", "trainer-portal")
    namespace = named(objects, "Namespace", "trainer-portal")
    assert namespace["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "restricted"
    policies = {policy["metadata"]["name"]: policy for policy in by_kind(objects, "NetworkPolicy")}
    assert "trainer-portal-default-deny" in policies and "trainer-portal-web-from-ingress" in policies
    if overlay == "trial":
        for store in ("postgres", "redis"):
            rule = policies[f"trainer-portal-{store}-from-portal"]["spec"]["ingress"][0]["from"][0]
            assert rule["podSelector"]["matchLabels"] == {"app.kubernetes.io/name": "trainer-portal"}
    else:
        assert not by_kind(objects, "StatefulSet"), "production uses external PostgreSQL and Redis"
        monitor = named(objects, "ServiceMonitor", "trainer-portal")
        assert monitor["spec"]["endpoints"][0]["path"] == "/metrics"
        # The scrape sends the token the web pods read from the same Secret (they load it whole with envFrom).
        assert monitor["spec"]["endpoints"][0]["bearerTokenSecret"] == {"name": "trainer-portal",
                                                                        "key": "TRAINER_PORTAL_METRICS_TOKEN"}
        web_env = named(objects, "Deployment", "trainer-portal-web")["spec"]["template"]["spec"]["containers"][0]
        assert {"secretRef": {"name": "trainer-portal"}} in web_env["envFrom"]
        watch = named(objects, "Deployment", "trainer-portal-cluster-watch")["spec"]["template"]["spec"]
        container = watch["containers"][0]
        port = {e["name"]: e.get("value") for e in container["env"]}["TRAINER_PORTAL_WATCH_METRICS_PORT"]
        assert {"name": "metrics", "containerPort": int(port)} in container["ports"]
        assert named(objects, "PodMonitor", "trainer-portal-cluster-watch")["spec"]["podMetricsEndpoints"][0][
            "port"] == "metrics"
        assert named(objects, "PrometheusRule", "trainer-portal")


def test_no_password_or_secret_value_is_shipped(rendered):
    _, objects = rendered
    assert not by_kind(objects, "Secret"), "secrets come from the operator's existing Secret, never from the repo"
    for obj in objects:
        if obj["kind"] == "ConfigMap":
            for key in obj.get("data", {}):
                assert not any(word in key.upper() for word in ("PASSWORD", "SECRET", "TOKEN", "DATABASE_URL")), key


def test_rbac_uses_no_wildcard_and_reads_no_secret_cluster_wide(rendered):
    _, objects = rendered
    for role in by_kind(objects, "ClusterRole") + by_kind(objects, "Role"):
        for rule in role["rules"]:
            for field in ("apiGroups", "resources", "verbs"):
                assert "*" not in rule[field], f"{role['metadata']['name']}: {rule}"
            if role["kind"] == "ClusterRole":
                assert "secrets" not in rule["resources"], rule


def test_committed_rbac_is_what_the_code_declares():
    out = io.StringIO()
    call_command("portal_rbac", stdout=out)
    committed = (ROOT / "base" / "rbac.yaml").read_text()
    assert committed == out.getvalue(), "regenerate: python manage.py portal_rbac > deploy/kubernetes/base/rbac.yaml"
    objects = list(yaml.safe_load_all(committed))
    assert objects == portal_rbac()


def test_the_cluster_page_checks_every_cluster_wide_rule_the_manifests_grant():
    """What the cluster page verifies (SelfSubjectAccessReview per row) covers every rule the ClusterRole grants."""
    from trainer_portal.kube.resources import PROBE_PERMISSIONS, WORKER_PERMISSIONS

    granted = {(group, resource, verb)
               for rule in portal_rbac()[0]["rules"]
               for group in rule["apiGroups"] for resource in rule["resources"] for verb in rule["verbs"]}
    declared = {(kind.group, kind.plural, verb) for verb, kind in (*WORKER_PERMISSIONS, *PROBE_PERMISSIONS)}
    # "get" is added next to list/watch (kubectl get NAME works for the account); everything else is declared.
    assert {entry for entry in granted if entry[2] != "get"} <= declared
