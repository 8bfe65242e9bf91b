from django.apps import AppConfig


class RuntimesConfig(AppConfig):
    """ClusterTrainingRuntime scheduling policies: authoring, validation, history, preview and sync."""

    name = "runtimes"
    verbose_name = "Runtime policies"
