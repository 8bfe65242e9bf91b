"""A tiny JSON client for the sandbox API server, over `http.client` with keep-alive (not the `kubernetes` package).

One `Client` per thread: `http.client` connections are not thread-safe. Watches open their own connection.
"""

from __future__ import annotations

import http.client
import json
import logging
import time
import urllib.parse
from collections.abc import Iterator
from typing import Any

log = logging.getLogger("sandbox.controllers")

MERGE_PATCH = "application/merge-patch+json"


class ApiError(Exception):
    """A non-2xx answer. `status` is the HTTP code, `reason` the metav1.Status reason (e.g. "NotFound")."""

    def __init__(self, status: int, reason: str, message: str, body: Any = None):
        super().__init__(f"{status} {reason}: {message}")
        self.status = status
        self.reason = reason
        self.message = message
        self.body = body


class Expired(ApiError):
    """410 Gone / Expired: the requested resourceVersion was compacted; the caller must relist."""


def _error_from(status: int, raw: bytes) -> ApiError:
    try:
        body = json.loads(raw or b"{}")
    except ValueError:
        body = {"message": raw.decode("utf-8", "replace")}
    if not isinstance(body, dict):
        body = {"message": str(body)}
    reason = body.get("reason") or http.client.responses.get(status, "Error")
    cls = Expired if status == 410 else ApiError
    return cls(status, reason, body.get("message", ""), body)


class Client:
    """Return-JSON helpers for one API server base URL, e.g. `Client("http://127.0.0.1:8080")`."""

    def __init__(self, base_url: str, *, timeout: float = 15.0, user_agent: str = "sandbox-controllers"):
        parsed = urllib.parse.urlsplit(base_url)
        if parsed.scheme != "http" or not parsed.hostname:
            raise ValueError(f"api_url must look like http://HOST:PORT, got {base_url!r}")
        self.host = parsed.hostname
        self.port = parsed.port or 80
        self.prefix = parsed.path.rstrip("/")
        self.timeout = timeout
        self.user_agent = user_agent
        self._conn: http.client.HTTPConnection | None = None

    # -- plumbing -------------------------------------------------------------------------------------------------

    def _url(self, path: str, query: dict[str, Any] | None) -> str:
        url = self.prefix + path
        if query:
            clean = {k: ("true" if v is True else "false" if v is False else v)
                     for k, v in query.items() if v is not None}
            url += "?" + urllib.parse.urlencode(clean)
        return url

    def close(self) -> None:
        """Close the keep-alive connection (a new one opens on the next request)."""
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def request(self, method: str, path: str, body: Any = None, *, content_type: str = "application/json",
                query: dict[str, Any] | None = None) -> Any:
        """Send one request and return the decoded JSON body (None when empty).

        Raises ApiError (Expired for 410) on a non-2xx answer, OSError/http.client.HTTPException when the
        connection fails twice in a row (a stale keep-alive connection is retried once).
        """
        payload = None if body is None else json.dumps(body).encode()
        headers = {"Accept": "application/json", "User-Agent": self.user_agent}
        if payload is not None:
            headers["Content-Type"] = content_type
        url = self._url(path, query)
        for attempt in (1, 2):
            if self._conn is None:
                self._conn = http.client.HTTPConnection(self.host, self.port, timeout=self.timeout)
            try:
                self._conn.request(method, url, body=payload, headers=headers)
                response = self._conn.getresponse()
                raw = response.read()
            except (OSError, http.client.HTTPException):
                self.close()
                if attempt == 2:
                    raise
                continue
            if response.getheader("Connection", "").lower() == "close":
                self.close()
            if response.status >= 300:
                raise _error_from(response.status, raw)
            return json.loads(raw) if raw else None
        raise AssertionError("unreachable")

    # -- verbs ----------------------------------------------------------------------------------------------------

    def get(self, path: str) -> dict:
        """GET one object; raises ApiError (reason NotFound when absent)."""
        return self.request("GET", path)

    def list(self, path: str, **query: Any) -> dict:
        """GET a collection; returns the List object (`items`, `metadata.resourceVersion`)."""
        return self.request("GET", path, query=query or None)

    def create(self, path: str, obj: dict) -> dict:
        """POST `obj` to the collection `path`; raises ApiError (AlreadyExists on a name clash)."""
        return self.request("POST", path, obj)

    def replace(self, path: str, obj: dict) -> dict:
        """PUT `obj` (optimistic concurrency on metadata.resourceVersion: Conflict when stale)."""
        return self.request("PUT", path, obj)

    def merge_patch(self, path: str, patch: dict) -> dict:
        """PATCH with a JSON merge patch."""
        return self.request("PATCH", path, patch, content_type=MERGE_PATCH)

    def update_status(self, path: str, obj: dict) -> dict:
        """PUT `obj` to the status subresource of the object at `path`."""
        return self.request("PUT", path + "/status", obj)

    def patch_status(self, path: str, patch: dict) -> dict:
        """Merge-patch the status subresource of the object at `path`."""
        return self.request("PATCH", path + "/status", patch, content_type=MERGE_PATCH)

    def delete(self, path: str, *, propagation: str | None = None) -> Any:
        """DELETE the object at `path`; returns the server's answer (Status or the deleted object)."""
        body = {"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": propagation} if propagation else None
        return self.request("DELETE", path, body)

    # -- watch ----------------------------------------------------------------------------------------------------

    def watch(self, path: str, resource_version: str | None = None, *, timeout_seconds: int = 60,
              stop=None, backoff_max: float = 5.0) -> Iterator[tuple[str, dict]]:
        """Yield `(type, object)` watch events for the collection `path`, forever (until `stop` is set).

        Starts with a list when `resource_version` is None and yields `("RELISTED", list_object)` for it; resumes
        from the last seen resourceVersion after a stream ends or breaks; on 410 Expired relists and yields
        `("RELISTED", list_object)` again, so the consumer can replace its cache. BOOKMARK events only move the
        resourceVersion. Connection and server errors are logged and retried with capped exponential backoff.
        """
        delay = 0.1
        rv = resource_version
        while stop is None or not stop.is_set():
            try:
                if rv is None:
                    listed = self.list(path)
                    rv = listed.get("metadata", {}).get("resourceVersion") or "0"
                    yield "RELISTED", listed
                for event_type, obj in self._stream(path, rv, timeout_seconds):
                    delay = 0.1
                    new_rv = (obj.get("metadata") or {}).get("resourceVersion")
                    if new_rv:
                        rv = new_rv
                    if event_type != "BOOKMARK":
                        yield event_type, obj
                    if stop is not None and stop.is_set():
                        return
            except Expired:
                log.info("watch %s: resourceVersion %s expired, relisting", path, rv)
                rv = None
                continue
            except (OSError, http.client.HTTPException, ApiError, ValueError) as exc:
                log.warning("watch %s failed (%s); retrying in %.1fs", path, exc, delay)
                if stop is not None:
                    stop.wait(delay)
                else:
                    time.sleep(delay)
                delay = min(delay * 2, backoff_max)

    def _stream(self, path: str, rv: str, timeout_seconds: int) -> Iterator[tuple[str, dict]]:
        """One watch request; yields decoded events until the server ends the stream. Raises Expired on 410."""
        query = {"watch": "true", "resourceVersion": rv, "allowWatchBookmarks": "true",
                 "timeoutSeconds": timeout_seconds}
        conn = http.client.HTTPConnection(self.host, self.port, timeout=timeout_seconds + 15)
        try:
            conn.request("GET", self._url(path, query), headers={"Accept": "application/json",
                                                                 "User-Agent": self.user_agent})
            response = conn.getresponse()
            if response.status >= 300:
                raise _error_from(response.status, response.read())
            while True:
                try:
                    line = response.readline()
                except TimeoutError:
                    return
                if not line:
                    return
                line = line.strip()
                if not line:
                    continue
                event = json.loads(line)
                event_type, obj = event.get("type"), event.get("object") or {}
                if event_type == "ERROR":
                    code = obj.get("code")
                    if code == 410 or obj.get("reason") in ("Expired", "Gone"):
                        raise Expired(410, obj.get("reason", "Expired"), obj.get("message", ""), obj)
                    raise ApiError(code or 500, obj.get("reason", "InternalError"), obj.get("message", ""), obj)
                yield event_type, obj
        finally:
            conn.close()
