"""The page chrome the jobs pages share: the brand and the navigation per role, one section highlighted, the
favicon."""

from __future__ import annotations

import re

import pytest

pytestmark = pytest.mark.django_db


def _nav(html: str) -> str:
    return re.search(r'<nav class="nav".*?</nav>', html, re.S).group(0)


def _current(html: str) -> list[str]:
    return re.findall(r'<a [^>]*aria-current="page"[^>]*>([^<]+)</a>', _nav(html))


def test_a_data_scientists_brand_and_api_docs_links_open(client, dana):
    client.force_login(dana)
    html = client.get("/jobs/").content.decode()

    brand = re.search(r'<a class="brand" href="([^"]+)"', html).group(1)
    docs = re.search(r'<a href="([^"]+)"[^>]*>API docs</a>', _nav(html)).group(1)

    assert client.get(brand, follow=True).redirect_chain[-1][0] == "/jobs/"
    assert client.get(docs).status_code == 200
    assert client.get("/api/schema/").status_code == 200


def test_a_user_without_a_role_is_not_offered_the_api_docs(client, charlie):
    client.force_login(charlie)

    response = client.get("/jobs/")

    assert "API docs" not in response.content.decode()


@pytest.mark.parametrize(("path", "section"), [("/preview/", "Preview"), ("/runtimes/", "Policies"),
                                               ("/jobs/", "Jobs"), ("/cluster/", "Cluster"),
                                               ("/cluster/jobs/no-such-batch/", "Cluster")])
def test_one_section_is_highlighted(client, alice, path, section):
    client.force_login(alice)

    response = client.get(path)

    assert response.status_code in (200, 404)
    assert _current(response.content.decode()) == [section]


def test_the_favicon_is_served(client):
    response = client.get("/favicon.ico", follow=True)

    assert response.status_code == 200
    assert response.redirect_chain and response.redirect_chain[-1][0].endswith(".svg")
