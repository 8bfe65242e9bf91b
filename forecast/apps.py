from django.apps import AppConfig


class ForecastConfig(AppConfig):
    """Estimated starts of waiting TrainJobs, their measured accuracy and what-if simulations."""

    name = "forecast"
    verbose_name = "Forecasts"

    def ready(self) -> None:
        from trainer_portal import jobfacts, jobhistory

        from . import history, selectors

        jobfacts.register_start_provider("forecast", selectors.estimates_for)
        jobhistory.register_history_source(history.SOURCE_NAME, history.jobs_tables_source)
