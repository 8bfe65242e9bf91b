"""E-mail through the portal's SMTP settings (Django's mail backend)."""

from __future__ import annotations

import smtplib

from django.core.mail import EmailMessage

from .base import Message, TransportError


def send(*, target: str, secret: str, message: Message) -> None:
    """Send ``message`` to the address ``target``. Raises TransportError (permanent when the server refuses the
    recipient or the sender)."""
    mail = EmailMessage(subject=message.title[:250], body=message.body, to=[target],
                        headers={"X-Portal-Delivery": str(message.delivery_id),
                                 "X-Portal-Idempotency-Key": message.idempotency_key})
    try:
        mail.send(fail_silently=False)
    except (smtplib.SMTPRecipientsRefused, smtplib.SMTPSenderRefused) as exc:
        raise TransportError(f"the mail server refused the message: {exc}", permanent=True) from exc
    except (TimeoutError, smtplib.SMTPException, OSError) as exc:
        raise TransportError(f"the mail server could not be reached or failed: {exc}") from exc
