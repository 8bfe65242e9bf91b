"""Use cases of notifications: manage channels and subscriptions, read the outbox sources into deliveries,
send what is due with retries, backoff and digests.

The outbox: every source registered in `trainer_portal.outbox` is read from a cursor stored per source
(`SourceCursor`, created at the source's head so history is never replayed). Each event is matched against the
subscriptions; the visibility check of its source (grants and the cluster's RBAC for jobs) runs at match time,
for the subscriber. A match writes a `Delivery` row whose (channel, event key) is unique in the database, so an
event reaches a channel at most once, however often or concurrently it is matched. Sending claims a row by
compare-and-set (pending → sending with a lease), so two workers never send the same row; a worker that dies
mid-send leaves a lease that expires and the row is sent again with the same idempotency key.
"""

from __future__ import annotations

import datetime as dt
import logging
import secrets as secrets_module
from collections import defaultdict
from email.utils import parseaddr

from django.conf import settings
from django.core.validators import EmailValidator, ValidationError
from django.db import IntegrityError, transaction
from django.db.models import F, Max
from django.utils import timezone

from trainer_portal import outbox, roles
from trainer_portal.cluster.connections import decrypt_secret, encrypt_secret
from trainer_portal.cluster.models import Cluster

from . import tasks
from .choices import JOB_SCOPES, ChannelKind, DeliveryState, EventKind, Scope
from .errors import Invalid, SubscriptionNotFound
from .models import Channel, Delivery, SourceCursor, Subscription
from .selectors import channel_get
from .transports import SENDERS, Message, TransportError
from .transports.chat import url_problem
from .transports.webhook import refused_address

logger = logging.getLogger(__name__)

SCAN_LIMIT = 500  # events per source per scan
SEND_LIMIT = 100  # deliveries per send run
MAX_CHANNELS = 20
MAX_SUBSCRIPTIONS = 100
MAX_WAIT_MINUTES = 60 * 24 * 14


# -- channels -------------------------------------------------------------------------------------------------------


def _hint(secret: str) -> str:
    scheme, _, rest = secret.partition("://")
    return f"{scheme}://…{rest[-4:]}" if rest else f"…{secret[-4:]}"


def channel_create(*, user, name: str, kind: str, target: str = "", chat_url: str = "") -> tuple[Channel, str]:
    """Create a channel of ``user`` and return it with the secret to show once (a webhook's signing secret; ""
    for the others). Raises Invalid naming the field to fix."""
    name = (name or "").strip()
    if not name or len(name) > 100:
        raise Invalid("name", "Give the channel a name of 1 to 100 characters.")
    if kind not in ChannelKind.values:
        raise Invalid("kind", f"Choose one of {', '.join(ChannelKind.values)}.")
    if Channel.objects.filter(owner=user).count() >= MAX_CHANNELS:
        raise Invalid("name", f"You have {MAX_CHANNELS} channels already; delete one first.")
    if Channel.objects.filter(owner=user, name=name).exists():
        raise Invalid("name", "You have a channel of that name already; choose another name.")
    target = (target or "").strip()
    shown = ""
    secret = ""
    if kind == ChannelKind.EMAIL:
        try:
            EmailValidator()(target)
        except ValidationError:
            raise Invalid("target", "Enter an e-mail address such as ada@example.org.") from None
        target = parseaddr(target)[1]
    elif kind == ChannelKind.WEBHOOK:
        if len(target) > 2000 or not target:
            raise Invalid("target", "Enter the receiver's http:// or https:// URL (at most 2000 characters).")
        problem = refused_address(target)
        if problem:
            raise Invalid("target", f"This URL cannot receive webhooks: {problem}.")
        secret = shown = secrets_module.token_urlsafe(32)
    else:
        chat_url = (chat_url or "").strip()
        problem = url_problem(chat_url) if chat_url and len(chat_url) <= 2000 else "enter the chat service's URL"
        if problem:
            raise Invalid("chatUrl", f"This chat URL cannot be used: {problem}.")
        secret, target = chat_url, ""
    try:
        with transaction.atomic():
            channel = Channel.objects.create(owner=user, name=name, kind=kind, target=target,
                                             secret_encrypted=encrypt_secret(secret) if secret else "",
                                             secret_hint=_hint(secret) if secret else "")
    except IntegrityError:
        raise Invalid("name", "You have a channel of that name already; choose another name.") from None
    return channel, shown


def channel_delete(*, user, channel_id: int) -> None:
    """Delete ``user``'s channel (its subscriptions and log go with it). Raises ChannelNotFound."""
    channel_get(user=user, channel_id=channel_id).delete()


def channel_test(*, user, channel_id: int) -> Delivery:
    """Queue a test message on ``user``'s channel (it shows in the channel's delivery log) and return its
    delivery. Raises ChannelNotFound."""
    channel = channel_get(user=user, channel_id=channel_id)
    now = timezone.now()
    key = f"test:{secrets_module.token_hex(8)}"
    payload = {"kind": "test", "subject": "Test message", "message": "This channel works.", "at": now.isoformat(),
               "key": key}
    delivery = Delivery.objects.create(channel=channel, event_key=key, kind="test", subject="Test message",
                                       payload=payload, next_attempt_at=now)
    transaction.on_commit(lambda: tasks.deliveries_send_task.delay())
    return delivery


# -- subscriptions --------------------------------------------------------------------------------------------------


def subscription_create(*, user, channel_id: int, scope: str, value: str = "", kinds: list[str],
                        wait_minutes: int | None = None, cluster: str | None = None) -> Subscription:
    """Subscribe ``user`` on their channel to ``kinds`` of events in ``scope``. Raises Invalid naming the field
    (platform events need ``notifications.platform``) or ChannelNotFound."""
    channel = channel_get(user=user, channel_id=channel_id)
    if scope not in Scope.values:
        raise Invalid("scope", f"Choose one of {', '.join(Scope.values)}.")
    kinds = sorted(set(kinds or []))
    if not kinds or any(kind not in EventKind.values for kind in kinds):
        raise Invalid("kinds", f"Choose at least one of {', '.join(EventKind.values)}.")
    value = (value or "").strip()
    if scope == Scope.PLATFORM:
        if not roles.has_capability(user, roles.NOTIFICATIONS_PLATFORM):
            raise Invalid("scope", roles.DENIED[roles.NOTIFICATIONS_PLATFORM])
        if any(kind not in outbox.PLATFORM_KINDS for kind in kinds):
            raise Invalid("kinds", f"Platform subscriptions take {', '.join(outbox.PLATFORM_KINDS)}.")
        value = ""
    else:
        if any(kind not in outbox.JOB_KINDS for kind in kinds):
            raise Invalid("kinds", f"Job subscriptions take {', '.join(outbox.JOB_KINDS)}; platform events need "
                                   "the platform scope.")
        if scope == Scope.MINE:
            value = ""
        elif not value or len(value) > 253:
            raise Invalid("value", f"Name the {scope} to follow (1 to 253 characters).")
    if outbox.WAITING in kinds:
        if wait_minutes is None or not 1 <= wait_minutes <= MAX_WAIT_MINUTES:
            raise Invalid("waitMinutes", f'"Waiting" needs a number of minutes from 1 to {MAX_WAIT_MINUTES}.')
    else:
        wait_minutes = None
    target = None
    if cluster:
        target = Cluster.objects.filter(name=cluster).first()
        if target is None:
            raise Invalid("cluster", "No such cluster; leave it empty for every cluster.")
    if Subscription.objects.filter(owner=user).count() >= MAX_SUBSCRIPTIONS:
        raise Invalid("scope", f"You have {MAX_SUBSCRIPTIONS} subscriptions already; delete one first.")
    outbox_cursors_ensure()  # from now on, not from history
    return Subscription.objects.create(owner=user, channel=channel, scope=scope, value=value, kinds=kinds,
                                       wait_minutes=wait_minutes, cluster=target)


def subscription_delete(*, user, subscription_id: int) -> None:
    """Delete ``user``'s subscription. Raises SubscriptionNotFound (also for someone else's)."""
    deleted, _ = Subscription.objects.filter(owner=user, pk=subscription_id).delete()
    if not deleted:
        raise SubscriptionNotFound(f"You have no subscription {subscription_id}.")


# -- the outbox: sources → deliveries -------------------------------------------------------------------------------


def _insert(rows: list[Delivery]) -> int:
    """Insert ``rows``, skipping those whose (channel, event key) exists; return how many were new (bulk_create
    with ignore_conflicts returns every row it was given, inserted or not)."""
    keys = {row.event_key for row in rows}
    # Rows already written (a rescan) are dropped here, before paying for their insert; the unique constraint
    # still settles a race with a concurrent scan.
    existing = set()
    for chunk in _chunks(sorted(keys), 500):
        existing.update(Delivery.objects.filter(event_key__in=chunk).values_list("channel_id", "event_key"))
    rows = [row for row in rows if (row.channel_id, row.event_key) not in existing]
    if not rows:
        return 0
    before = Delivery.objects.aggregate(m=Max("id"))["m"] or 0
    Delivery.objects.bulk_create(rows, ignore_conflicts=True)
    return Delivery.objects.filter(id__gt=before, channel_id__in={row.channel_id for row in rows}).count()


def _chunks(items: list, size: int):
    for start in range(0, len(items), size):
        yield items[start:start + size]


def outbox_cursors_ensure() -> None:
    """Create the cursor of every registered source that has none, at the source's head (history is not sent)."""
    known = set(SourceCursor.objects.values_list("source", flat=True))
    for source in outbox.sources():
        if source.name not in known:
            try:
                with transaction.atomic():
                    SourceCursor.objects.create(source=source.name, position=source.head())
            except IntegrityError:  # another process created it first: same head, same meaning
                pass


def _subscriptions() -> list[Subscription]:
    return list(Subscription.objects.filter(channel__enabled=True, owner__is_active=True)
                .select_related("owner", "channel"))


def _in_scope(subscription: Subscription, event: outbox.Event) -> bool:
    if event.kind not in subscription.kinds:
        return False
    if subscription.cluster_id and subscription.cluster_id != event.cluster_id:
        return False
    if subscription.scope == Scope.PLATFORM:
        return event.kind in outbox.PLATFORM_KINDS and roles.has_capability(subscription.owner,
                                                                            roles.NOTIFICATIONS_PLATFORM)
    if event.job is None:
        return False
    if subscription.scope == Scope.MINE:
        owner = subscription.owner
        return bool(event.creator) and event.creator in {owner.get_username(), owner.email}
    field_of = {Scope.NAMESPACE: event.namespace, Scope.RUNTIME: event.runtime, Scope.QUEUE: event.queue}
    return subscription.scope in JOB_SCOPES and field_of.get(subscription.scope) == subscription.value


class _Matcher:
    """Matches events against the subscriptions, asking each source's visibility check once per (user, cluster,
    namespace) per scan."""

    def __init__(self, subscriptions: list[Subscription]) -> None:
        self.subscriptions = subscriptions
        self._seen: dict[tuple, bool] = {}
        self._index: dict[tuple[str, str], list[Subscription]] | None = None

    def visible(self, source: outbox.Source, subscription: Subscription, event: outbox.Event) -> bool:
        key = (source.name, subscription.owner_id, event.cluster_id, event.namespace)
        if key not in self._seen:
            try:
                self._seen[key] = bool(source.visible(subscription.owner, event))
            except Exception:  # a visibility check that fails hides the event (never tells too much)
                logger.exception("notifications: visibility check of %s failed", source.name)
                self._seen[key] = False
        return self._seen[key]

    def candidates(self, event: outbox.Event) -> list[Subscription]:
        """Return the subscriptions that could match ``event`` (indexed by scope and value, not a full loop)."""
        if self._index is None:
            self._index = defaultdict(list)
            for subscription in self.subscriptions:
                self._index[(subscription.scope, subscription.value)].append(subscription)
        if event.kind in outbox.PLATFORM_KINDS:
            return self._index.get((Scope.PLATFORM, ""), [])
        found = list(self._index.get((Scope.MINE, ""), []))
        for scope, value in ((Scope.NAMESPACE, event.namespace), (Scope.RUNTIME, event.runtime),
                             (Scope.QUEUE, event.queue)):
            if value:
                found.extend(self._index.get((scope, value), []))
        return found

    def deliveries(self, source: outbox.Source, events, *, key_of=None, now: dt.datetime) -> list[Delivery]:
        rows = []
        for event in events:
            payload = None
            for subscription in self.candidates(event):
                if not _in_scope(subscription, event) or not self.visible(source, subscription, event):
                    continue
                key = key_of(subscription, event) if key_of else event.key
                payload = payload or event.as_dict()
                rows.append(Delivery(channel_id=subscription.channel_id, subscription=subscription, event_key=key,
                                     kind=event.kind, subject=event.subject[:600], payload=payload,
                                     next_attempt_at=now))
        return rows


def outbox_scan(*, limit: int = SCAN_LIMIT) -> int:
    """Read every source from its cursor, write a delivery per matching (event, channel) and advance the cursors;
    then derive the "waiting longer than N minutes" events. Return the number of deliveries written (duplicates
    of rows already written are skipped by the database)."""
    outbox_cursors_ensure()
    now = timezone.now()
    matcher = _Matcher(_subscriptions())
    written = 0
    for source in outbox.sources():
        cursor = SourceCursor.objects.get(source=source.name)
        events = list(source.events_after(cursor.position, limit))
        if not events:
            continue
        rows = matcher.deliveries(source, events, now=now) if matcher.subscriptions else []
        with transaction.atomic():
            written += _insert(rows)
            # Compare-and-set: a concurrent scan that moved it first wrote the same rows (ignored above).
            SourceCursor.objects.filter(pk=cursor.pk, position=cursor.position).update(
                position=max(event.sequence for event in events))
    written += _waiting_scan(matcher, now)
    if written:
        transaction.on_commit(lambda: tasks.deliveries_send_task.delay())
    return written


def _waiting_scan(matcher: _Matcher, now: dt.datetime) -> int:
    """Write a delivery for each job waiting longer than a subscription's minutes: once per (job, subscription,
    threshold), whatever the number of scans (the event key names all three)."""
    by_minutes: dict[int, list[Subscription]] = defaultdict(list)
    for subscription in matcher.subscriptions:
        if outbox.WAITING in subscription.kinds and subscription.wait_minutes:
            by_minutes[subscription.wait_minutes].append(subscription)
    written = 0
    for minutes, subscriptions in sorted(by_minutes.items()):
        sub_matcher = _Matcher(subscriptions)
        sub_matcher._seen = matcher._seen

        def key_of(subscription, event, minutes=minutes):
            job = event.job or {}
            return f"waiting:{subscription.pk}:{event.cluster_id}:{job.get('uid', '')}:{minutes}"

        for source in outbox.sources():
            if source.waiting is None:
                continue
            events = source.waiting(now - dt.timedelta(minutes=minutes), SCAN_LIMIT)
            rows = sub_matcher.deliveries(source, events, key_of=key_of, now=now)
            written += _insert(rows)
    return written


# -- sending ----------------------------------------------------------------------------------------------------------


def _lease_seconds() -> float:
    return 2 * settings.NOTIFICATIONS_HTTP_TIMEOUT_SECONDS + 60


def backoff_seconds(attempts: int) -> float:
    """Return the wait before attempt ``attempts + 1``: the initial delay doubled per attempt, capped."""
    initial = settings.NOTIFICATIONS_RETRY_INITIAL_SECONDS
    return min(settings.NOTIFICATIONS_RETRY_MAX_SECONDS, initial * (2 ** max(attempts - 1, 0)))


def digests_fold(*, now: dt.datetime | None = None) -> int:
    """Fold a burst into one digest: a channel with more than ``NOTIFICATIONS_DIGEST_THRESHOLD`` never-tried
    deliveries written within ``NOTIFICATIONS_DIGEST_WINDOW_SECONDS`` gets one digest delivery listing them all;
    the folded rows are marked ``digested``. Return the number of digests written."""
    now = now or timezone.now()
    threshold = settings.NOTIFICATIONS_DIGEST_THRESHOLD
    since = now - dt.timedelta(seconds=settings.NOTIFICATIONS_DIGEST_WINDOW_SECONDS)
    fresh = (Delivery.objects.filter(state=DeliveryState.PENDING, attempts=0, created_at__gte=since)
             .exclude(kind__in=("digest", "test")))
    by_channel: dict[int, list[Delivery]] = defaultdict(list)
    for row in fresh.order_by("id").only("id", "channel_id", "event_key", "kind", "subject", "payload"):
        by_channel[row.channel_id].append(row)
    written = 0
    for channel_id, rows in by_channel.items():
        if len(rows) <= threshold:
            continue
        ids = [row.id for row in rows]
        key = f"digest:{ids[0]}-{ids[-1]}"
        payload = {"kind": "digest", "count": len(rows), "events": [row.payload for row in rows],
                   "subject": f"{len(rows)} events", "key": key, "at": now.isoformat()}
        with transaction.atomic():
            digest, created = Delivery.objects.get_or_create(
                channel_id=channel_id, event_key=key,
                defaults={"kind": "digest", "subject": f"{len(rows)} events", "payload": payload,
                          "next_attempt_at": now})
            Delivery.objects.filter(id__in=ids, state=DeliveryState.PENDING, attempts=0).update(
                state=DeliveryState.DIGESTED, digest=digest)
        written += created
    return written


def _render(delivery: Delivery) -> Message:
    payload = delivery.payload
    base = settings.NOTIFICATIONS_BASE_URL.rstrip("/")
    if delivery.kind == "digest":
        lines = [f"- [{e.get('cluster', '')}] {e.get('subject', '')}: {e.get('kind', '')}"
                 for e in payload.get("events", [])]
        title = f"Trainer Portal: {payload.get('count', len(lines))} events"
        body = "\n".join(lines)
    else:
        where = f"[{payload.get('cluster')}] " if payload.get("cluster") else ""
        kind = EventKind(delivery.kind).label if delivery.kind in EventKind.values else delivery.kind
        title = f"Trainer Portal: {where}{delivery.subject} — {kind}"
        body = "\n".join(part for part in (payload.get("reason", ""), payload.get("message", "")) if part)
        if payload.get("path") and base:
            body += f"\n\n{base}{payload['path']}"
    document = {"version": 1, "kind": delivery.kind, "deliveryId": delivery.pk,
                "idempotencyKey": delivery.idempotency_key, "event": payload}
    if payload.get("path") and base:
        document["url"] = base + payload["path"]
    return Message(title=title, body=body or title, document=document, delivery_id=delivery.pk,
                   idempotency_key=delivery.idempotency_key)


def delivery_send(delivery_id: int) -> str:
    """Send one due delivery if this process can claim it; return its state afterwards ("" when it was not ours:
    not due, sent or being sent by someone else). A transient failure schedules the next attempt with backoff; a
    permanent one, or the last attempt, marks it failed."""
    now = timezone.now()
    claimed = Delivery.objects.filter(pk=delivery_id, state=DeliveryState.PENDING, next_attempt_at__lte=now).update(
        state=DeliveryState.SENDING, next_attempt_at=now + dt.timedelta(seconds=_lease_seconds()))
    if not claimed:
        return ""
    delivery = Delivery.objects.select_related("channel").get(pk=delivery_id)
    channel = delivery.channel
    try:
        secret = decrypt_secret(channel.secret_encrypted) if channel.secret_encrypted else ""
        SENDERS[channel.kind](target=channel.target, secret=secret, message=_render(delivery))
    except TransportError as exc:
        return _record_failure(delivery, exc.message, permanent=exc.permanent)
    except Exception as exc:  # an unreadable secret, a library bug: logged, retried like a transient failure
        logger.exception("notifications: delivery %s failed", delivery_id)
        return _record_failure(delivery, f"{exc.__class__.__name__}: {exc}"[:500], permanent=False)
    Delivery.objects.filter(pk=delivery_id, state=DeliveryState.SENDING).update(
        state=DeliveryState.DELIVERED, delivered_at=timezone.now(), attempts=F("attempts") + 1, last_error="")
    return DeliveryState.DELIVERED


def _record_failure(delivery: Delivery, message: str, *, permanent: bool) -> str:
    attempts = delivery.attempts + 1
    if permanent or attempts >= settings.NOTIFICATIONS_MAX_ATTEMPTS:
        state, when = DeliveryState.FAILED, timezone.now()
    else:
        state, when = DeliveryState.PENDING, timezone.now() + dt.timedelta(seconds=backoff_seconds(attempts))
    Delivery.objects.filter(pk=delivery.pk, state=DeliveryState.SENDING).update(
        state=state, attempts=attempts, next_attempt_at=when, last_error=message[:2000])
    if state == DeliveryState.PENDING:
        delay = max((when - timezone.now()).total_seconds(), 0.0)
        transaction.on_commit(lambda: tasks.deliveries_send_task.apply_async(countdown=delay))
    return state


def deliveries_send_due(*, limit: int = SEND_LIMIT) -> dict[str, int]:
    """Fold bursts into digests, take back leases of senders that died, and send up to ``limit`` due deliveries
    (oldest first). Return {state: count} of what the sends ended in."""
    now = timezone.now()
    digests_fold(now=now)
    Delivery.objects.filter(state=DeliveryState.SENDING, next_attempt_at__lt=now).update(state=DeliveryState.PENDING)
    due = list(Delivery.objects.filter(state=DeliveryState.PENDING, next_attempt_at__lte=now)
               .order_by("next_attempt_at", "id").values_list("id", flat=True)[:limit])
    outcome: dict[str, int] = defaultdict(int)
    for delivery_id in due:
        state = delivery_send(delivery_id)
        if state:
            outcome[state] += 1
    return dict(outcome)
