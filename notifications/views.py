"""The notifications pages: one's channels and subscriptions (forms, no JavaScript), and a channel's log."""

from __future__ import annotations

from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views import View

from trainer_portal.errors import PortalError
from trainer_portal.permissions import CapabilityRequiredMixin
from trainer_portal.roles import NOTIFICATIONS_OWN, NOTIFICATIONS_PLATFORM, has_capability

from . import selectors, services
from .errors import ChannelNotFound, Invalid, SubscriptionNotFound
from .forms import ChannelForm, SubscriptionForm

_FORM_FIELD = {"chatUrl": "chat_url", "waitMinutes": "wait_minutes"}


def _page(request, *, channel_form=None, subscription_form=None, created_secret: str = "", status: int = 200):
    channels = selectors.channel_list(user=request.user)
    context = {
        "channels": channels,
        "subscriptions": selectors.subscription_list(user=request.user),
        "channel_form": channel_form or ChannelForm(),
        "subscription_form": subscription_form or SubscriptionForm(channels=channels),
        "created_secret": created_secret,
        "platform": has_capability(request.user, NOTIFICATIONS_PLATFORM),
    }
    return render(request, "notifications/page.html", context, status=status)


def _attach(form, exc: PortalError) -> None:
    name = _FORM_FIELD.get(getattr(exc, "field_name", ""), getattr(exc, "field_name", None))
    form.add_error(name if name in form.fields else None, exc.message)


class NotificationsView(CapabilityRequiredMixin, View):
    """GET: channels, subscriptions and the forms to add them."""

    capability = NOTIFICATIONS_OWN

    def get(self, request: HttpRequest) -> HttpResponse:
        return _page(request)


class ChannelCreateView(CapabilityRequiredMixin, View):
    """POST: add a channel (a webhook's secret is shown once)."""

    capability = NOTIFICATIONS_OWN

    def post(self, request: HttpRequest) -> HttpResponse:
        form = ChannelForm(request.POST)
        if not form.is_valid():
            return _page(request, channel_form=form, status=400)
        data = form.cleaned_data
        try:
            channel, secret = services.channel_create(user=request.user, name=data["name"], kind=data["kind"],
                                                      target=data["target"], chat_url=data["chat_url"])
        except Invalid as exc:
            _attach(form, exc)
            return _page(request, channel_form=form, status=400)
        messages.success(request, f"Channel {channel.name} added.")
        return _page(request, created_secret=secret, status=201)


class ChannelDeleteView(CapabilityRequiredMixin, View):
    capability = NOTIFICATIONS_OWN

    def post(self, request: HttpRequest, channel_id: int) -> HttpResponse:
        try:
            services.channel_delete(user=request.user, channel_id=channel_id)
        except ChannelNotFound:
            raise Http404("No such channel.")
        messages.success(request, "Channel deleted.")
        return redirect("notifications:page")


class ChannelTestView(CapabilityRequiredMixin, View):
    capability = NOTIFICATIONS_OWN

    def post(self, request: HttpRequest, channel_id: int) -> HttpResponse:
        try:
            services.channel_test(user=request.user, channel_id=channel_id)
        except ChannelNotFound:
            raise Http404("No such channel.")
        messages.success(request, "Test message queued; its outcome shows in the log below.")
        return redirect("notifications:channel", channel_id=channel_id)


class ChannelLogView(CapabilityRequiredMixin, View):
    """GET: the channel's delivery log (newest first)."""

    capability = NOTIFICATIONS_OWN

    def get(self, request: HttpRequest, channel_id: int) -> HttpResponse:
        try:
            channel = selectors.channel_get(user=request.user, channel_id=channel_id)
        except ChannelNotFound:
            raise Http404("No such channel.")
        rows = selectors.delivery_log(user=request.user, channel_id=channel_id)
        return render(request, "notifications/channel.html", {"channel": channel, "deliveries": rows})


class SubscriptionCreateView(CapabilityRequiredMixin, View):
    capability = NOTIFICATIONS_OWN

    def post(self, request: HttpRequest) -> HttpResponse:
        channels = selectors.channel_list(user=request.user)
        form = SubscriptionForm(request.POST, channels=channels)
        if not form.is_valid():
            return _page(request, subscription_form=form, status=400)
        data = form.cleaned_data
        try:
            services.subscription_create(user=request.user, channel_id=data["channel"], scope=data["scope"],
                                         value=data["value"], kinds=data["kinds"],
                                         wait_minutes=data["wait_minutes"], cluster=data["cluster"] or None)
        except (Invalid, ChannelNotFound) as exc:
            _attach(form, exc)
            return _page(request, subscription_form=form, status=400)
        messages.success(request, "Subscribed.")
        return redirect("notifications:page")


class SubscriptionDeleteView(CapabilityRequiredMixin, View):
    capability = NOTIFICATIONS_OWN

    def post(self, request: HttpRequest, subscription_id: int) -> HttpResponse:
        try:
            services.subscription_delete(user=request.user, subscription_id=subscription_id)
        except SubscriptionNotFound:
            raise Http404("No such subscription.")
        messages.success(request, "Subscription deleted.")
        return redirect("notifications:page")
