"""REST routes for forecasts under /api/v1/forecast/."""

from django.urls import path

from . import api

urlpatterns = [
    path("forecast/estimates/", api.EstimateListApi.as_view(), name="api-forecast-estimates"),
    path("forecast/accuracy/", api.AccuracyApi.as_view(), name="api-forecast-accuracy"),
    path("forecast/whatifs/", api.WhatIfListApi.as_view(), name="api-forecast-whatifs"),
    path("forecast/whatifs/<int:whatif_id>/", api.WhatIfDetailApi.as_view(), name="api-forecast-whatif"),
    path("forecast/whatifs/<int:whatif_id>/cancel/", api.WhatIfCancelApi.as_view(), name="api-forecast-whatif-cancel"),
]
