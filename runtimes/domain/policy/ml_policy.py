"""Rules for spec.mlPolicy: one framework at most, numNodes, torch (envInjection), mpi and flux."""

from __future__ import annotations

from .. import constants as c
from .checker import (
    _CheckerBase,
    _show,
)


class _MLPolicyChecks(_CheckerBase):
    """spec.mlPolicy rules."""

    # -- ML policy

    def check_ml_policy(self, spec: dict) -> None:
        path = "spec.mlPolicy"
        ml = self.mapping(spec, "mlPolicy", path)
        if ml is None:
            return
        kinds = [k for k in c.ML_POLICY_KINDS if k in ml]
        if len(kinds) > 1:
            self.error(
                path,
                "ml_policy.multiple",
                f"Only one of the policy can be configured: mlPolicy sets {', '.join(kinds)}; keep exactly one",
            )
        self.ml_kind = kinds[0] if len(kinds) == 1 else None
        num_nodes = self.positive_int(ml, "numNodes", f"{path}.numNodes", "ml_policy.num_nodes.invalid")
        if num_nodes is not None:
            self.num_nodes = num_nodes
        for kind in kinds:
            if ml[kind] is not None and not isinstance(ml[kind], dict):
                self.error(f"{path}.{kind}", "field.type", f"{path}.{kind} must be a mapping (use {{}} for defaults)")
        torch = ml.get("torch")
        if isinstance(torch, dict):
            self.check_torch(torch, f"{path}.torch")
        mpi = ml.get("mpi")
        if isinstance(mpi, dict):
            self.mpi = mpi
            self.check_mpi(mpi, f"{path}.mpi")
        flux = ml.get("flux")
        if isinstance(flux, dict):
            self.positive_int(flux, "numProcPerNode", f"{path}.flux.numProcPerNode", "ml_policy.flux.num_proc")

    def check_torch(self, torch: dict, path: str) -> None:
        for removed in ("numProcPerNode", "elasticPolicy"):
            if removed in torch:
                hint = (
                    "set numProcPerNode on the TrainJob (spec.trainer.numProcPerNode)"
                    if removed == "numProcPerNode"
                    else "elastic training is no longer configured in the runtime"
                )
                self.error(
                    f"{path}.{removed}",
                    "ml_policy.torch.removed_field",
                    f"torch.{removed} was removed in Trainer v2.3; remove it ({hint})",
                )
        injection = self.mapping(torch, "envInjection", f"{path}.envInjection")
        if injection is None:
            return
        targets = self.sequence(injection, "targets", f"{path}.envInjection.targets")
        if targets is None:
            return
        tpath = f"{path}.envInjection.targets"
        seen: set[str] = set()
        for _, item, target in self.mapping_items(
            targets,
            tpath,
            limit=c.MAX_ENV_INJECTION_TARGETS,
            code="ml_policy.torch.env_injection.too_many",
            too_many=(
                f"envInjection.targets has {len(targets)} items; at most {c.MAX_ENV_INJECTION_TARGETS} are allowed"
            ),
            fields="jobName and containerNames",
        ):
            job = target.get("jobName")
            if not isinstance(job, str) or not 1 <= len(job) <= c.MAX_NAME_LENGTH:
                self.error(
                    f"{item}.jobName",
                    "ml_policy.torch.env_injection.job_name",
                    f"{item}.jobName is required: the name of a ReplicatedJob (1–{c.MAX_NAME_LENGTH} characters)",
                )
            elif job in seen:
                self.error(
                    f"{item}.jobName",
                    "ml_policy.torch.env_injection.duplicate",
                    f"jobName {_show(job)} appears twice in envInjection.targets; merge the two entries",
                )
            else:
                seen.add(job)
                if self.rjob_by_name and job not in self.rjob_by_name:
                    self.warn(
                        f"{item}.jobName",
                        "ml_policy.torch.env_injection.unknown_job",
                        f"jobName {_show(job)} is not a ReplicatedJob of this runtime, so nothing is injected; "
                        f"use one of {', '.join(sorted(self.rjob_by_name))}",
                    )
            names = target.get("containerNames")
            if not isinstance(names, list) or not 1 <= len(names) <= c.MAX_ENV_INJECTION_CONTAINERS:
                self.error(
                    f"{item}.containerNames",
                    "ml_policy.torch.env_injection.container_names",
                    f"{item}.containerNames must list 1–{c.MAX_ENV_INJECTION_CONTAINERS} container names",
                )
                continue
            for n_index, name in enumerate(names):
                npath = f"{item}.containerNames[{n_index}]"
                if not isinstance(name, str) or not 1 <= len(name) <= c.MAX_LABEL_LENGTH:
                    self.error(
                        npath,
                        "ml_policy.torch.env_injection.container_name",
                        f"{npath} must be a container name of 1–{c.MAX_LABEL_LENGTH} characters",
                    )
                elif name == "node":
                    self.error(
                        npath,
                        "ml_policy.torch.env_injection.node_container",
                        "the 'node' container already gets the torch environment; remove it from containerNames",
                    )
            if len({n for n in names if isinstance(n, str)}) != len(names):
                self.error(
                    f"{item}.containerNames",
                    "ml_policy.torch.env_injection.container_names_duplicate",
                    "containerNames is a set: remove the duplicate names",
                )

    def check_mpi(self, mpi: dict, path: str) -> None:
        self.positive_int(mpi, "numProcPerNode", f"{path}.numProcPerNode", "ml_policy.mpi.num_proc")
        if "mpiImplementation" in mpi and mpi["mpiImplementation"] not in c.MPI_IMPLEMENTATIONS:
            self.error(
                f"{path}.mpiImplementation",
                "ml_policy.mpi.implementation",
                f"mpiImplementation must be OpenMPI (or empty), got {_show(mpi['mpiImplementation'])}",
            )
        if "sshAuthMountPath" in mpi:
            value = mpi["sshAuthMountPath"]
            if not isinstance(value, str) or len(value) > c.MAX_SSH_AUTH_MOUNT_PATH:
                self.error(
                    f"{path}.sshAuthMountPath",
                    "ml_policy.mpi.ssh_auth_mount_path",
                    f"sshAuthMountPath must be a path of at most {c.MAX_SSH_AUTH_MOUNT_PATH} characters",
                )
        if "runLauncherAsNode" in mpi and not isinstance(mpi["runLauncherAsNode"], bool):
            self.error(
                f"{path}.runLauncherAsNode",
                "ml_policy.mpi.run_launcher_as_node",
                f"runLauncherAsNode must be true or false, got {_show(mpi['runLauncherAsNode'])}",
            )
