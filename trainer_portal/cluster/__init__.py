"""The live cluster as the portal knows it: connection status, the live topology snapshot, the one watcher process.

Shared infrastructure: it knows no app. Apps plug in through registries filled from their ``AppConfig.ready()``:
``informers.register`` (watch-event handlers) and ``selectors.register_page_panel`` (sections of the /cluster/ page).
"""
