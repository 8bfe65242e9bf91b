"""Who may open which page: anonymous → login, no role → 403, viewer → read only, admin → everything."""

from __future__ import annotations

import pytest
from django.urls import reverse

from tests.ui import make_policy, torch_manifest

READ_PAGES = [
    ("runtimes:list", {}),
    ("runtimes:detail", {"name": "demo"}),
    ("runtimes:export", {"name": "demo"}),
    ("runtimes:export-all", {}),
    ("runtimes:history", {"name": "demo"}),
    ("runtimes:diff", {"name": "demo"}),
]
EDIT_PAGES = [
    ("runtimes:new", {}),
    ("runtimes:edit", {"name": "demo"}),
    ("runtimes:import", {}),
    ("runtimes:rollback", {"name": "demo", "number": 1}),
    ("runtimes:delete", {"name": "demo"}),
]
EDIT_ENDPOINTS = [
    ("runtimes:new", {}),
    ("runtimes:edit", {"name": "demo"}),
    ("runtimes:import", {}),
    ("runtimes:rollback", {"name": "demo", "number": 1}),
    ("runtimes:delete", {"name": "demo"}),
    ("runtimes:render-yaml", {}),
    ("runtimes:parse-yaml", {}),
]


@pytest.fixture
def demo(alice):
    return make_policy(torch_manifest("demo"), alice)


@pytest.mark.django_db
@pytest.mark.parametrize(("name", "kwargs"), READ_PAGES + EDIT_PAGES)
def test_it_sends_anonymous_users_to_login(client, demo, name, kwargs):
    url = reverse(name, kwargs=kwargs)
    response = client.get(url)
    assert response.status_code == 302
    assert response["Location"].startswith(reverse("login"))


@pytest.mark.django_db
@pytest.mark.parametrize(("name", "kwargs"), READ_PAGES + EDIT_PAGES)
def test_it_forbids_users_without_a_role(client, charlie, demo, name, kwargs):
    client.force_login(charlie)
    assert client.get(reverse(name, kwargs=kwargs)).status_code == 403


@pytest.mark.django_db
@pytest.mark.parametrize(("name", "kwargs"), READ_PAGES)
def test_it_lets_viewers_read(client, bob, demo, name, kwargs):
    client.force_login(bob)
    assert client.get(reverse(name, kwargs=kwargs)).status_code == 200


@pytest.mark.django_db
@pytest.mark.parametrize(("name", "kwargs"), EDIT_PAGES)
def test_it_forbids_viewers_to_open_edit_pages(client, bob, demo, name, kwargs):
    client.force_login(bob)
    assert client.get(reverse(name, kwargs=kwargs)).status_code == 403


@pytest.mark.django_db
@pytest.mark.parametrize(("name", "kwargs"), EDIT_ENDPOINTS)
def test_it_forbids_viewers_to_post_changes(client, bob, demo, name, kwargs):
    client.force_login(bob)
    response = client.post(reverse(name, kwargs=kwargs), {"yaml": "", "version": 1})
    assert response.status_code == 403
    demo.refresh_from_db()
    assert demo.version == 1


@pytest.mark.django_db
@pytest.mark.parametrize(("name", "kwargs"), READ_PAGES + EDIT_PAGES)
def test_it_lets_admins_open_every_page(client, alice, demo, name, kwargs):
    client.force_login(alice)
    assert client.get(reverse(name, kwargs=kwargs)).status_code == 200


@pytest.mark.django_db
def test_it_shows_edit_buttons_to_admins_only(client, alice, bob, demo):
    edit_url = reverse("runtimes:edit", kwargs={"name": "demo"})
    client.force_login(alice)
    admin_page = client.get(reverse("runtimes:detail", kwargs={"name": "demo"})).content.decode()
    admin_list = client.get(reverse("runtimes:list")).content.decode()
    client.force_login(bob)
    viewer_page = client.get(reverse("runtimes:detail", kwargs={"name": "demo"})).content.decode()
    viewer_list = client.get(reverse("runtimes:list")).content.decode()

    assert edit_url in admin_page and edit_url not in viewer_page
    assert reverse("runtimes:new") in admin_list and reverse("runtimes:new") not in viewer_list
    assert reverse("runtimes:import") in admin_list and reverse("runtimes:import") not in viewer_list


@pytest.mark.django_db
def test_it_shows_the_role_badge(client, bob):
    client.force_login(bob)
    assert ">viewer</span>" in client.get(reverse("runtimes:list")).content.decode()


@pytest.mark.django_db
def test_it_returns_404_for_unknown_policies(client, alice):
    client.force_login(alice)
    assert client.get(reverse("runtimes:detail", kwargs={"name": "nope"})).status_code == 404
    assert client.get(reverse("runtimes:edit", kwargs={"name": "nope"})).status_code == 404


@pytest.mark.django_db
def test_it_serves_the_login_page(client):
    response = client.get(reverse("login"))
    assert response.status_code == 200
    assert 'name="username"' in response.content.decode()


@pytest.mark.django_db
def test_it_logs_in_and_lands_on_the_list(client, alice):
    response = client.post(reverse("login"), {"username": "alice", "password": "alice-password-1"}, follow=True)
    assert response.redirect_chain[-1][0] == reverse("runtimes:list")


@pytest.mark.django_db
def test_it_renders_the_shared_layout(client, bob):
    client.force_login(bob)
    html = client.get(reverse("runtimes:list")).content.decode()
    for link in ('href="/preview/"', 'href="/cluster/"', f'href="{reverse("api-docs")}"'):
        assert link in html
    assert f'<form method="post" action="{reverse("logout")}">' in html
    assert "django_htmx/htmx-2.min.js" in html and "css/portal.css" in html
    assert 'aria-current="page">Policies</a>' in html
