"""UI-test fixtures: a fast password hasher (the persona fixtures hash a password per test)."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _fast_password_hasher(settings):
    # PBKDF2 costs ~0.5 s per user on this machine; these tests check pages, not password storage.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
