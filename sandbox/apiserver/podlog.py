"""`GET pods/{name}/log`: the options kube-apiserver accepts and the checks the kubelet makes before streaming.

`LogRequest.parse(params)` validates `PodLogOptions` (422 Invalid, as `ValidatePodLogOptions`);
`LogRequest.container_for(pod)` picks the container (400 as the API server and kubelet word it);
`LogRequest.select(output, now)` returns the lines to send now (since/tail applied) and `LogRequest.limit` caps bytes.
The output itself comes from `sandbox.container_logs`.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sandbox.apiserver.errors import ApiError, bad_request
from sandbox.apiserver.watch import parse_bool
from sandbox.container_logs import ContainerOutput, Line, container_run

_INTEGER_OPTIONS = ("sinceSeconds", "tailLines", "limitBytes")


def _invalid(name: str, field: str, message: str) -> ApiError:
    return ApiError(422, "Invalid", f'PodLogOptions "{name}" is invalid: {field}: {message}',
                    details={"name": name, "kind": "PodLogOptions",
                             "causes": [{"reason": "FieldValueInvalid", "message": message, "field": field}]})


@dataclass
class LogRequest:
    """The parsed query of one log request."""

    container: str = ""
    follow: bool = False
    previous: bool = False
    timestamps: bool = False
    since: float | None = None  # POSIX time of the first line wanted
    tail: int | None = None
    limit: int | None = None

    @classmethod
    def parse(cls, name: str, params: dict[str, str], now: float) -> LogRequest:
        """Returns the request for the query parameters; raises ApiError 400/422 for bad values."""
        numbers: dict[str, int] = {}
        for option in _INTEGER_OPTIONS:
            if params.get(option) not in (None, ""):
                try:
                    numbers[option] = int(params[option])
                except ValueError:
                    raise bad_request(f"{option}: invalid value {params[option]!r}; expected an integer")
        if numbers.get("tailLines", 0) < 0:
            raise _invalid(name, "tailLines", f"Invalid value: {numbers['tailLines']}: must be greater than or "
                                              "equal to 0")
        if "limitBytes" in numbers and numbers["limitBytes"] < 1:
            raise _invalid(name, "limitBytes", f"Invalid value: {numbers['limitBytes']}: must be greater than 0")
        if "sinceSeconds" in numbers and numbers["sinceSeconds"] < 1:
            raise _invalid(name, "sinceSeconds", f"Invalid value: {numbers['sinceSeconds']}: must be greater "
                                                 "than 0")
        since_time = params.get("sinceTime")
        if since_time and "sinceSeconds" in numbers:
            raise _invalid(name, "sinceSeconds", "Forbidden: at most one of `sinceTime` or `sinceSeconds` may be "
                                                 "specified")
        since = now - numbers["sinceSeconds"] if "sinceSeconds" in numbers else None
        if since_time:
            try:
                since = datetime.fromisoformat(since_time.replace("Z", "+00:00")).timestamp()
            except ValueError:
                raise bad_request(f"sinceTime: invalid RFC 3339 time {since_time!r}")
        return cls(container=params.get("container", ""), follow=parse_bool(params.get("follow")) is True,
                   previous=parse_bool(params.get("previous")) is True,
                   timestamps=parse_bool(params.get("timestamps")) is True, since=since,
                   tail=numbers.get("tailLines"), limit=numbers.get("limitBytes"))

    def container_for(self, pod: dict[str, Any]) -> str | None:
        """Returns the container to read, or None when the pod is not on a node yet (an empty log, as upstream).

        Raises ApiError 400 when no container is named and the pod has several, the name is not one of the pod's,
        `previous` asks for a run that never happened, or the container has not started.
        """
        name = pod["metadata"]["name"]
        spec = pod.get("spec") or {}
        names = [c.get("name") for c in spec.get("containers") or []]
        every = names + [c.get("name") for c in spec.get("initContainers") or []]
        container = self.container
        if not container:
            if len(names) != 1:
                raise bad_request(f"a container name must be specified for pod {name}, choose one of: "
                                  f"[{' '.join(map(str, names))}]")
            container = names[0]
        elif container not in every:
            raise bad_request(f"container {container} is not valid for pod {name}")
        if not spec.get("nodeName"):
            return None
        if self.previous:
            # The simulated kubelet never restarts a container, so there is no previous run to show.
            raise bad_request(f'previous terminated container "{container}" in pod "{name}" not found')
        if container_run(pod, container) is None:
            raise bad_request(f'container "{container}" in pod "{name}" is waiting to start: ContainerCreating')
        return container

    def select(self, output: ContainerOutput, now: float) -> list[Line]:
        """Returns the lines written up to `now` that the request wants (sinceSeconds/sinceTime, then tailLines)."""
        lines = [line for line in output.lines(now) if self.since is None or line.time >= self.since]
        if self.tail is not None:
            lines = lines[len(lines) - self.tail:] if self.tail else []
        return lines
