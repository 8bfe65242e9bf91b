"""The alerting and recording rules: valid for Prometheus, proven to fire and clear by ``promtool test rules``, the
same in the plain rules file and in the PrometheusRule, and routed by a valid example Alertmanager config."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
RULES = ROOT / "deploy" / "monitoring" / "trainer-portal.rules.yaml"
PROMETHEUS_RULE = ROOT / "deploy" / "kubernetes" / "components" / "monitoring" / "prometheusrule.yaml"
DASHBOARD = ROOT / "deploy" / "monitoring" / "grafana-dashboard.json"


def tool(name: str) -> str:
    path = shutil.which(name)
    assert path, f"{name} is installed by scripts/ensure-system-deps (Debian packages prometheus, " \
                 "prometheus-alertmanager)"
    return path


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(args, capture_output=True, text=True, timeout=120, cwd=ROOT)


def test_each_alert_fires_and_clears_under_promtool():
    out = run(tool("promtool"), "test", "rules", "tests/monitoring/rules_test.yaml")

    assert out.returncode == 0, out.stdout + out.stderr
    assert "SUCCESS" in out.stdout + out.stderr


def test_every_alert_has_a_promtool_test():
    alerts = {rule["alert"] for group in yaml.safe_load(RULES.read_text())["groups"]
              for rule in group["rules"] if "alert" in rule}
    tested = set(re.findall(r"alertname: (\w+)", (ROOT / "tests" / "monitoring" / "rules_test.yaml").read_text()))

    assert alerts == tested


def test_the_prometheus_rule_carries_the_same_groups():
    plain = yaml.safe_load(RULES.read_text())
    operator = yaml.safe_load(PROMETHEUS_RULE.read_text())

    assert operator["kind"] == "PrometheusRule"
    assert operator["spec"]["groups"] == plain["groups"]
    assert "prometheusrule.yaml" in (PROMETHEUS_RULE.parent / "kustomization.yaml").read_text()


def test_the_example_alertmanager_routing_is_valid():
    out = run(tool("amtool"), "check-config", "deploy/monitoring/alertmanager.example.yaml")

    assert out.returncode == 0, out.stdout + out.stderr


def test_the_dashboard_uses_only_portal_metrics_and_recorded_series():
    dashboard = json.loads(DASHBOARD.read_text())
    recorded = {rule["record"] for group in yaml.safe_load(RULES.read_text())["groups"]
                for rule in group["rules"] if "record" in rule}
    exprs = [target["expr"] for panel in dashboard["panels"] for target in panel["targets"]]

    assert len(exprs) >= 10
    for expr in exprs:
        for name in re.findall(r"\btrainer_portal[a-z0-9_:]*", expr):
            assert name.startswith("trainer_portal_") or name in recorded, (name, expr)
