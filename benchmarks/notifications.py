"""The notification outbox scan: read a batch of TrainJob transitions, match subscriptions, write deliveries.

Scenario (full / --quick): 500 (200) notable transitions in 50 namespaces; 100 (20) subscribers — half data
scientists granted 5 namespaces each and subscribed to one namespace, half viewers subscribed to a runtime — each
with a webhook channel. Timed:
- scan: `services.outbox_scan` over the batch from a cursor reset to 0 (deliveries deleted between rounds, not timed):
  matching with the per-(user, cluster, namespace) visibility check, and the unique-keyed bulk insert (5,500
  deliveries in the full scenario). Target p95 ≤ 1 ms per delivery written (a beat tick every 15 s then keeps up with
  a burst of 500 admissions told to 11 subscribers each).
- rescan: the same batch again with its deliveries kept (every match already written: skipped before inserting).
- baseline, same run: only reading the batch from the source (`events_after`) → ratio.

Database: a throwaway SQLite file, or a throwaway PostgreSQL database when DATABASE_URL points at PostgreSQL.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from benchmarks.sync import _drop_database, _pct, _setup_django

TARGET_PER_DELIVERY_P95_MS = 1.0


def _seed(events: int, users: int) -> None:
    from django.contrib.auth.models import Group, User
    from django.utils import timezone

    from jobs.models import NamespaceGrant, TrainJob, TrainJobTransition
    from notifications import services

    now = timezone.now()
    scientists, viewers = Group.objects.get_or_create(name="data-scientist")[0], Group.objects.get_or_create(
        name="viewer")[0]
    for index in range(users):
        user = User.objects.create_user(f"u{index}", email=f"u{index}@example.org")
        channel, _ = services.channel_create(user=user, name="hook", kind="webhook", target="http://127.0.0.1:9/")
        if index % 2:
            user.groups.add(viewers)
            services.subscription_create(user=user, channel_id=channel.pk, scope="runtime", value=f"rt-{index % 5}",
                                         kinds=["admitted", "failed"])
        else:
            user.groups.add(scientists)
            group = Group.objects.create(name=f"team-{index}")
            user.groups.add(group)
            for k in range(5):
                NamespaceGrant.objects.create(group=group, namespace=f"ns-{(index + k) % 50}")
            services.subscription_create(user=user, channel_id=channel.pk, scope="namespace",
                                         value=f"ns-{index % 50}", kinds=["admitted"])
    for index in range(events):
        job = TrainJob.objects.create(uid=f"u-{index}", namespace=f"ns-{index % 50}", name=f"j-{index}",
                                      runtime_name=f"rt-{index % 5}", state="admitted", since=now, submitted_at=now)
        TrainJobTransition.objects.create(job=job, from_state="queued", to_state="admitted", at=now, seq=index + 1)


def bench(events: int, users: int, rounds: int) -> bool:
    """Run the scenario; print the table; return True when the target holds."""
    from notifications import services
    from notifications.models import Delivery, SourceCursor
    from trainer_portal import outbox

    _seed(events, users)
    source = outbox.source_named("jobs")
    baseline, scans, rescans, written = [], [], [], 0
    for _ in range(rounds):
        started = time.perf_counter()
        assert len(source.events_after(0, events)) == events
        baseline.append(time.perf_counter() - started)
        Delivery.objects.all().delete()
        SourceCursor.objects.update(position=0)
        started = time.perf_counter()
        written = services.outbox_scan(limit=events)
        scans.append(time.perf_counter() - started)
        SourceCursor.objects.update(position=0)
        started = time.perf_counter()
        assert services.outbox_scan(limit=events) == 0
        rescans.append(time.perf_counter() - started)
    base = _pct(baseline, 0.5)
    print(f"{events} events, {users} subscribers, {written} deliveries written per scan")
    for name, samples, target in (("baseline: read the batch only", baseline, None),
                                  ("scan: match + write deliveries", scans, None),
                                  ("rescan: every delivery a duplicate", rescans, None)):
        p50, p95 = _pct(samples, 0.5), _pct(samples, 0.95)
        goal = f" (target p95 ≤ {target:g} s)" if target else ""
        print(f"  {name:<36} p50 {p50 * 1000:8.1f} ms  p95 {p95 * 1000:8.1f} ms  ×{p50 / base:.1f} baseline  "
              f"{p50 / events * 1e6:7.1f} µs/event{goal}")
    per_delivery = _pct(scans, 0.95) / max(written, 1) * 1000
    print(f"  scan p95 per delivery written: {per_delivery:.3f} ms (target ≤ {TARGET_PER_DELIVERY_P95_MS:g} ms)")
    return per_delivery <= TARGET_PER_DELIVERY_P95_MS


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.notifications", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="200 events, 20 subscribers, few rounds")
    args = parser.parse_args(argv)
    events, users, rounds = (200, 20, 3) if args.quick else (500, 100, 10)
    with tempfile.TemporaryDirectory() as tmp:
        url = _setup_django(Path(tmp))
        for folder in ("broker", "broker-processed", "broker-control"):  # a scan publishes one send task
            (Path(tmp) / "var" / folder).mkdir(parents=True, exist_ok=True)
        try:
            ok = bench(events, users, rounds)
        finally:
            _drop_database(url)
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
