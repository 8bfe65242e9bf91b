"""Real processes: two web replicas (each its own VAR_DIR, one shared SQLite file) and one writer (``cluster_watch
--once`` and ``cluster_check``) show the same live topology and the same validation result; with the cluster's API
server frozen (SIGSTOP), every page and API answers at once from what was stored."""

from __future__ import annotations

import http.cookiejar
import json
import os
import re
import signal
import time
import urllib.error
import urllib.parse
import urllib.request
from contextlib import ExitStack

import pytest

from tests.domain.test_policy_cases import with_scheduling

from .processes import manage, migrated_database, query, web_server

# A hang would last the API server's request timeout (10 s) or more; answering from the database takes milliseconds.
ANSWER_BOUND_SECONDS = 1.0
MANIFEST = with_scheduling("torch", {
    "schedulingPolicy": {"gang": {}},
    "schedulingConstraints": {"topology": [{"key": "topology.kubernetes.io/zone"}]},
    "disruptionMode": {"all": {}},
})


class Web:
    """One replica's base URL with a logged-in session (pages) and an API token."""

    def __init__(self, url: str, username: str, password: str, token: str = "") -> None:
        self.url = url
        self.jar = http.cookiejar.CookieJar()
        self.opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(self.jar))
        page = self.opener.open(f"{url}/login/", timeout=30).read().decode()
        csrf = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page).group(1)
        body = urllib.parse.urlencode({"username": username, "password": password, "csrfmiddlewaretoken": csrf})
        self.opener.open(urllib.request.Request(f"{url}/login/", data=body.encode(),
                                                headers={"Referer": f"{url}/login/"}), timeout=30)
        self.token = token or self.api("POST", "/api/v1/auth/token/",
                                       {"username": username, "password": password})[1]["token"]

    def page(self, path: str) -> tuple[int, str, float]:
        """GET a page with the session; return (status, body, seconds)."""
        started = time.monotonic()
        try:
            with self.opener.open(f"{self.url}{path}", timeout=30) as response:
                return response.status, response.read().decode(), time.monotonic() - started
        except urllib.error.HTTPError as exc:
            return exc.code, exc.read().decode(), time.monotonic() - started

    def api(self, method: str, path: str, body: dict | None = None) -> tuple[int, dict, float]:
        """Call the API with the token; return (status, JSON body, seconds)."""
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if getattr(self, "token", ""):
            headers["Authorization"] = f"Token {self.token}"
        request = urllib.request.Request(f"{self.url}{path}", method=method, headers=headers,
                                         data=json.dumps(body).encode() if body is not None else None)
        started = time.monotonic()
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                return response.status, json.loads(response.read() or b"{}"), time.monotonic() - started
        except urllib.error.HTTPError as exc:
            return exc.code, json.loads(exc.read() or b"{}"), time.monotonic() - started


@pytest.fixture(scope="module")
def portal(tmp_path_factory):
    """A sandbox (CRD with the string disruptionMode form), one migrated database file, a writer that stored the
    topology and the check, and two web replicas with VAR_DIRs of their own. Yields a namespace of them."""
    from sandbox.testing import SandboxProcess

    root = tmp_path_factory.mktemp("replicas")
    with ExitStack() as stack:
        sandbox = stack.enter_context(SandboxProcess(topology="demo", controllers=False,
                                                     trainer_crd="v2.4-v1alpha2"))
        database = migrated_database(root)
        writer = root / "writer"
        cluster_env = {"TRAINER_PORTAL_KUBECONFIG": sandbox.kubeconfig}
        setup = manage(database, writer, "portal_demo_setup")
        assert setup.returncode == 0, setup.stderr
        credentials = dict(line.split(" ", 1) for line in (writer / "demo-credentials.txt").read_text().splitlines())
        for args in (("cluster_watch", "--once"), ("cluster_check",)):
            done = manage(database, writer, *args, **cluster_env)
            assert done.returncode == 0, done.stderr
        urls = [stack.enter_context(web_server(database, root / f"web{i}", **cluster_env)) for i in (1, 2)]
        first = Web(urls[0], "viewer", credentials["viewer"])
        webs = [first, Web(urls[1], "viewer", credentials["viewer"], token=first.token)]
        yield type("Portal", (), {"sandbox": sandbox, "database": database, "writer": writer, "webs": webs,
                                  "cluster_env": cluster_env, "root": root})
        if sandbox.pid:
            os.kill(sandbox.pid, signal.SIGCONT)


def _preview(web: Web) -> dict:
    status, body, _ = web.api("POST", "/api/v1/preview/", {"manifest": MANIFEST, "numNodes": 2,
                                                           "topology": {"source": "live"}})
    assert status == 200, body
    return body


def test_two_replicas_show_the_same_live_topology_and_validation(portal):
    nodes = query(portal.database, "SELECT nodes FROM cluster_topologysnapshot")[0][0]
    assert nodes > 0
    answers = []
    for web in portal.webs:
        status, cluster, _ = web.api("GET", "/api/v1/cluster/?dialect=camel")
        assert status == 200 and cluster["reachable"] is True and cluster["checked"] is True
        preview = _preview(web)
        status, validation, _ = web.api("POST", "/api/v1/runtimes/validate/", {"manifest": MANIFEST})
        assert status == 200
        answers.append((cluster["checkedAt"], cluster["crdSchema"]["disruptionMode"], preview["topologySource"],
                        json.dumps(preview["placement"], sort_keys=True),
                        sorted(p["code"] for p in validation["errors"] + validation["warnings"]), validation["ok"]))
    assert answers[0] == answers[1]
    assert answers[0][1] == "string" and answers[0][2] == "live"
    assert "scheduling.disruption_mode.cluster_form" in answers[0][4]  # the stored facts, on both replicas
    for web in portal.webs:  # and no replica wrote a file of its own
        folder = portal.root / f"web{portal.webs.index(web) + 1}"
        assert not (folder / "topology").exists() and not (folder / "cluster").exists()


PAGES = ["/cluster/", "/cluster/?cluster=default", "/preview/", "/runtimes/", "/jobs/", "/account/tokens/"]
APIS = [("GET", "/api/v1/cluster/"), ("GET", "/api/v1/cluster/default/"), ("GET", "/api/v1/runtimes/"),
        ("GET", "/api/v1/trainjobs/"), ("GET", "/api/v1/trainjobs/summary/")]


def test_a_frozen_api_server_leaves_every_page_and_api_answering(portal):
    web = portal.webs[0]
    for path in PAGES:  # warm: first requests import and build what every later one reuses
        web.page(path)
    _preview(web)
    os.kill(portal.sandbox.pid, signal.SIGSTOP)
    try:
        slow = []
        for path in PAGES:
            status, body, seconds = web.page(path)
            assert status == 200, (path, body[:500])
            slow += [(path, seconds)] if seconds > ANSWER_BOUND_SECONDS else []
        for method, path in APIS:
            status, body, seconds = web.api(method, path)
            assert status == 200, (path, body)
            slow += [(path, seconds)] if seconds > ANSWER_BOUND_SECONDS else []
        started = time.monotonic()
        assert _preview(web)["topologySource"] == "live"
        slow += [("preview", time.monotonic() - started)] if time.monotonic() - started > ANSWER_BOUND_SECONDS else []
        status, body, seconds = web.api("POST", "/api/v1/cluster/default/check/")
        assert status == 202 and body["queued"] is True
        assert slow == []

        # The background check gives up after its probe timeout and stores what it saw.
        started = time.monotonic()
        done = manage(portal.database, portal.writer, "cluster_check", TRAINER_PORTAL_CLUSTER_PROBE_TIMEOUT="1",
                      **portal.cluster_env)
        assert done.returncode == 0 and "unreachable" in done.stdout, done.stderr
        assert time.monotonic() - started < 60
        status, page, _ = web.page("/cluster/")
        assert status == 200 and "(cluster unreachable)" in page
        status, body, _ = web.api("GET", "/api/v1/cluster/?dialect=camel")
        assert body["reachable"] is False and body["checked"] is True
    finally:
        os.kill(portal.sandbox.pid, signal.SIGCONT)
