"""E-mail over SMTP (``NOTIFICATIONS_SMTP_*``): one plain-text message per delivery."""

from __future__ import annotations

import smtplib
import ssl
from email.message import EmailMessage

from django.conf import settings

from .base import Message, TransportError


def send(*, target: str, secret: str, message: Message) -> None:
    """Send ``message`` to the address ``target``. Raises TransportError (permanent when the server refuses the
    recipient or the sender for good, i.e. a 5xx answer)."""
    mail = EmailMessage()
    mail["Subject"] = message.title[:250]
    mail["From"] = settings.NOTIFICATIONS_EMAIL_FROM
    mail["To"] = target
    mail["X-Portal-Delivery"] = str(message.delivery_id)
    mail["X-Portal-Idempotency-Key"] = message.idempotency_key
    mail.set_content(message.body)
    try:
        with smtplib.SMTP(settings.NOTIFICATIONS_SMTP_HOST, settings.NOTIFICATIONS_SMTP_PORT,
                          timeout=settings.NOTIFICATIONS_HTTP_TIMEOUT_SECONDS) as server:
            if settings.NOTIFICATIONS_SMTP_STARTTLS:
                server.starttls(context=ssl.create_default_context())
            if settings.NOTIFICATIONS_SMTP_USER:
                server.login(settings.NOTIFICATIONS_SMTP_USER, settings.NOTIFICATIONS_SMTP_PASSWORD)
            server.send_message(mail)
    except smtplib.SMTPRecipientsRefused as exc:
        codes = [code for code, _ in exc.recipients.values()]
        raise TransportError(f"the mail server refused the recipient: {exc.recipients}",
                             permanent=all(code >= 500 for code in codes)) from exc
    except smtplib.SMTPResponseException as exc:
        raise TransportError(f"the mail server answered {exc.smtp_code}: {exc.smtp_error!r}",
                             permanent=exc.smtp_code >= 500) from exc
    except (smtplib.SMTPException, OSError) as exc:
        raise TransportError(f"the mail server could not be reached: {exc}") from exc
