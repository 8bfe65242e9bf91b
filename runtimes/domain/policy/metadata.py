"""Rules for apiVersion/kind and metadata: the runtime name, labels (incl. the framework label) and annotations."""

from __future__ import annotations

from typing import Any

from .. import constants as c
from ..labels import dns1123_subdomain_problems, label_key_problems, label_value_problems
from .checker import (
    MAX_ANNOTATIONS_BYTES,
    _CheckerBase,
    _key,
    _kind,
    _show,
)


class _MetadataChecks(_CheckerBase):
    """apiVersion, kind and metadata rules."""

    # -- type meta and metadata

    def check_type_meta(self, manifest: dict) -> None:
        if manifest.get("apiVersion") != c.API_VERSION:
            self.error(
                "apiVersion",
                "apiVersion.invalid",
                f"apiVersion must be {c.API_VERSION}, got {_show(manifest.get('apiVersion'))}; set it",
            )
        if manifest.get("kind") != c.KIND:
            self.error("kind", "kind.invalid", f"kind must be {c.KIND}, got {_show(manifest.get('kind'))}; set it")

    def check_metadata(self, manifest: dict) -> None:
        metadata = self.mapping(manifest, "metadata", "metadata", required=True)
        if metadata is None:
            return
        name = metadata.get("name")
        if not isinstance(name, str) or not name:
            self.error("metadata.name", "metadata.name.required", "metadata.name is required; give the policy a name")
        else:
            problems = dns1123_subdomain_problems(name)
            if problems:
                self.error(
                    "metadata.name",
                    "metadata.name.invalid",
                    f"metadata.name {_show(name)} is not a valid DNS-1123 subdomain: {'; '.join(problems)}",
                )
            elif len(name) > c.MAX_LABEL_LENGTH:
                # Decision D2 (docs/decisions.md): the runtime name ends up in label values, which are ≤ 63.
                self.error(
                    "metadata.name",
                    "metadata.name.too_long_for_label",
                    f"metadata.name is {len(name)} characters; shorten it to ≤ {c.MAX_LABEL_LENGTH} because the "
                    "runtime name is used as a label value, which Kubernetes limits to 63 characters",
                )
        if "namespace" in metadata:
            self.warn(
                "metadata.namespace",
                "metadata.namespace.ignored",
                "ClusterTrainingRuntime is cluster-scoped: metadata.namespace is ignored; remove it",
            )
        labels = self.mapping(metadata, "labels", "metadata.labels")
        if labels is not None:
            for key, value in labels.items():
                path = _key("metadata.labels", key)
                self.check_label_key(path, key, "metadata.labels.key_invalid")
                if not isinstance(value, str):
                    self.error(
                        path,
                        "metadata.labels.value_type",
                        f"label value must be a string, got {_kind(value)} {_show(value)}; quote it",
                    )
                else:
                    problems = label_value_problems(value)
                    if problems:
                        self.error(
                            path,
                            "metadata.labels.value_invalid",
                            f"label value {_show(value)} {'; '.join(problems)}",
                        )
        if labels is None or not labels.get(c.FRAMEWORK_LABEL):
            self.warn(
                _key("metadata.labels", c.FRAMEWORK_LABEL),
                "metadata.labels.framework_missing",
                f"add the label {c.FRAMEWORK_LABEL} (e.g. torch, deepspeed, torchtune) so the SDK and the policy "
                "list can show the framework",
            )
        annotations = self.mapping(metadata, "annotations", "metadata.annotations")
        if annotations is not None:
            total = 0
            for key, value in annotations.items():
                path = _key("metadata.annotations", key)
                self.check_label_key(path, key, "metadata.annotations.key_invalid")
                if not isinstance(value, str):
                    self.error(
                        path,
                        "metadata.annotations.value_type",
                        f"annotation value must be a string, got {_kind(value)} {_show(value)}; quote it",
                    )
                else:
                    total += len(str(key).encode(errors="surrogatepass")) + len(value.encode(errors="surrogatepass"))
            if total > MAX_ANNOTATIONS_BYTES:
                self.error(
                    "metadata.annotations",
                    "metadata.annotations.too_large",
                    f"annotations total {total} bytes; Kubernetes allows {MAX_ANNOTATIONS_BYTES}: shorten them",
                )

    def check_label_key(self, path: str, key: Any, code: str) -> None:
        problems = label_key_problems(key) if isinstance(key, str) else ["must be a string"]
        if problems:
            self.error(path, code, f"key {_show(key)} is not a valid label key: {'; '.join(problems)}")
