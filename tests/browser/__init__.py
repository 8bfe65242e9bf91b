"""Browser tests: Playwright (sync API) driving Debian chromium against pytest-django's live server."""
