"""Page chrome: the favicon, the role badge, the 403 page's icon, and 403s logged without a traceback."""

from __future__ import annotations

import logging

import pytest
from django.contrib.staticfiles import finders
from django.urls import reverse


@pytest.mark.django_db
def test_every_page_links_the_favicon_and_it_exists(client, alice):
    client.force_login(alice)
    html = client.get(reverse("runtimes:list")).content.decode()
    assert '<link rel="icon" href="/static/favicon.svg" type="image/svg+xml">' in html
    path = finders.find("favicon.svg")
    assert path
    with open(path) as icon:
        assert icon.read().startswith("<svg")


@pytest.mark.django_db
def test_the_admin_badge_names_the_role_and_what_it_may_do(client, alice):
    client.force_login(alice)
    html = client.get(reverse("runtimes:list")).content.decode()
    assert 'title="You may edit policies and apply them to the cluster"' in html
    assert '<span class="role-badge__label">role: </span><span class="role-badge__name">platform admin</span>' in html


@pytest.mark.django_db
def test_the_forbidden_page_draws_its_icon_without_an_emoji_and_logs_one_line(client, bob, caplog):
    client.force_login(bob)
    with caplog.at_level(logging.WARNING, logger="django.request"):
        response = client.get(reverse("runtimes:new"))
    assert response.status_code == 403
    html = response.content.decode()
    assert '<div class="empty__icon" aria-hidden="true"><svg' in html and "⛔" not in html
    (record,) = [r for r in caplog.records if r.name == "django.request"]
    assert record.getMessage().startswith("Forbidden")
    assert record.exc_info is None and "Traceback" not in caplog.text
