"""Warnings about runtimes that are valid but cannot work well: gangs that deadlock on dependsOn, and the pod
count a level-3 gang needs in one topology domain."""

from __future__ import annotations

from .. import constants as c
from .checker import (
    _CheckerBase,
    _is_int,
    _RJob,
    _show,
)


class _LintChecks(_CheckerBase):
    """Deadlock and capacity warnings."""

    def pods_per_job(self, rjob: _RJob) -> int:
        if rjob.ancestor == c.ANCESTOR_TRAINER or (self.ml_kind == "mpi" and rjob.name == c.MPI_NODE_JOB):
            if self.ml_kind == "mpi" and rjob.name == c.MPI_NODE_JOB and self.mpi.get("runLauncherAsNode") is True:
                return max(self.num_nodes - 1, 1)
            return self.num_nodes
        job_spec = rjob.raw.get("template", {}).get("spec") if isinstance(rjob.raw.get("template"), dict) else None
        parallelism = job_spec.get("parallelism") if isinstance(job_spec, dict) else None
        return parallelism if _is_int(parallelism) and parallelism > 0 else 1

    def check_gang_dependencies(self, names: list[str], epath: str) -> None:
        members = set(names)
        for name in names:
            rjob = self.rjob_by_name.get(name)
            if rjob is None:
                continue
            for target, status in rjob.depends_on:
                if target not in members:
                    continue
                if status == "Ready":
                    self.warn(
                        f"{epath}.targetReplicatedJobs",
                        "deadlock.gang_waits_for_ready",
                        f"{_show(name)} dependsOn {_show(target)} Ready, so its pods are created only after "
                        f"{_show(target)} is ready, but this gang needs {_show(name)} scheduled too: the gang can "
                        f"never complete. Put {_show(name)} and {_show(target)} in separate entries or use basic",
                    )
                else:
                    self.warn(
                        f"{epath}.targetReplicatedJobs",
                        "deadlock.gang_waits_for_complete",
                        f"{_show(name)} dependsOn {_show(target)} Complete, yet both are in one gang: "
                        f"{_show(name)}'s pods are created only after {_show(target)} finishes, so the gang can "
                        f"never be satisfied. Give {_show(target)} its own (basic) entry",
                    )
