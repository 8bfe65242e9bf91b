"""One malformed object never blocks the others: the tracker repairs what it can and quarantines what the database
refuses, on whichever database runs the tests (PostgreSQL refuses NUL; SQLite stores it, so the refusal is played
by a trigger the test installs)."""

from __future__ import annotations

import pytest
from django.db import connection

from jobs import services
from jobs.handlers import AdmissionHandler
from jobs.models import TrackerStatus, TrainJob
from tests.jobs import objects as o
from trainer_portal.kube import resources as kinds

pytestmark = pytest.mark.django_db


@pytest.fixture
def handler():
    handler = AdmissionHandler(identity="test-watcher")
    for kind in handler.kinds:
        handler.relisted(kind, [], "1")
    return handler


@pytest.fixture
def refuse_poison():
    """Make the database refuse any TrainJob row named "poison" (a real refusal, not a mock)."""
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute("CREATE FUNCTION refuse_poison() RETURNS trigger AS $$ BEGIN "
                           "IF NEW.name = 'poison' THEN RAISE EXCEPTION 'refused by the test'; END IF; "
                           "RETURN NEW; END $$ LANGUAGE plpgsql")
            cursor.execute("CREATE TRIGGER refuse_poison BEFORE INSERT OR UPDATE ON jobs_trainjob "
                           "FOR EACH ROW EXECUTE FUNCTION refuse_poison()")
        else:
            for event in ("INSERT", "UPDATE"):
                cursor.execute(f"CREATE TRIGGER refuse_poison_{event.lower()} BEFORE {event} ON jobs_trainjob "
                               "WHEN NEW.name = 'poison' BEGIN SELECT RAISE(ABORT, 'refused by the test'); END")

    def lift():
        with connection.cursor() as cursor:
            if connection.vendor == "postgresql":
                cursor.execute("DROP TRIGGER refuse_poison ON jobs_trainjob")
                cursor.execute("DROP FUNCTION refuse_poison()")
            else:
                cursor.execute("DROP TRIGGER refuse_poison_insert")
                cursor.execute("DROP TRIGGER refuse_poison_update")

    yield lift


def test_a_nul_annotation_is_stripped_and_every_other_job_is_written(handler):
    bad = o.trainjob("bad", "uid-bad", creator="mallory\x00", conditions=[
        o.condition("Suspended", True, "Why", "half a pair \ud800 and a NUL \x00")], suspend=True)
    handler.changed(kinds.TRAINJOB, "ADDED", bad)
    handler.changed(kinds.TRAINJOB, "ADDED", o.trainjob("good", "uid-good"))
    handler.flush(leader=True)

    rows = {row.name: row for row in TrainJob.objects.all()}
    assert set(rows) == {"bad", "good"}
    assert rows["bad"].creator == "mallory"
    assert "\x00" not in rows["bad"].message and "\ud800" not in rows["bad"].message
    assert handler.sanitized == 1 and handler.quarantined == 0
    status = TrackerStatus.objects.get()
    assert status.sanitized == 1 and status.connected


def test_a_row_the_database_refuses_is_quarantined_and_the_batch_still_lands(handler, refuse_poison):
    handler.changed(kinds.TRAINJOB, "ADDED", o.trainjob("poison", "uid-poison"))
    for index in range(3):
        handler.changed(kinds.TRAINJOB, "ADDED", o.trainjob(f"fine-{index}", f"uid-fine-{index}"))
    handler.flush(leader=True)

    assert sorted(TrainJob.objects.values_list("name", flat=True)) == ["fine-0", "fine-1", "fine-2"]
    assert handler.quarantined == 1
    assert handler.last_error == ""  # the database answers: the tracker is not failing
    assert TrackerStatus.objects.get().quarantined == 1

    # Not retried on every flush (it would be refused again), but written as soon as it changes and can be stored.
    writes = handler.writes
    handler.flush(leader=True)
    assert handler.writes == writes
    refuse_poison()
    handler.changed(kinds.TRAINJOB, "MODIFIED", o.trainjob("poison", "uid-poison", suspend=True))
    handler.flush(leader=True)
    assert TrainJob.objects.filter(name="poison").exists()


def test_a_failing_database_is_not_mistaken_for_a_bad_row(handler, monkeypatch):
    handler.changed(kinds.TRAINJOB, "ADDED", o.trainjob("fine", "uid-fine"))
    monkeypatch.setattr(services, "_database_answers", lambda: False)  # the database stopped answering
    original = services._apply_batch

    def down(records, now, cluster=None):
        from django.db import OperationalError
        raise OperationalError("server closed the connection unexpectedly")

    monkeypatch.setattr(services, "_apply_batch", down)
    handler.flush(leader=True)
    assert handler.quarantined == 0 and handler.last_error.startswith("database:")
    monkeypatch.setattr(services, "_apply_batch", original)
    handler.flush(leader=True)  # still dirty: written once the database is back
    assert TrainJob.objects.filter(name="fine").exists()


def test_an_object_of_an_unexpected_shape_is_quarantined_not_fatal(handler):
    weird = o.trainjob("weird", "uid-weird")
    weird["spec"] = ["not", "a", "mapping"]
    weird["status"] = "broken"
    weird["metadata"]["annotations"] = {"a": 1}
    handler.changed(kinds.TRAINJOB, "ADDED", weird)
    handler.changed(kinds.TRAINJOB, "ADDED", o.trainjob("fine", "uid-fine"))
    handler.flush(leader=True)
    names = set(TrainJob.objects.values_list("name", flat=True))
    assert "fine" in names
    assert handler.last_error == ""
    assert "weird" in names or handler.quarantined == 1
