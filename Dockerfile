# Trainer Portal image: web (gunicorn + whitenoise), worker and beat (celery) share it.
FROM python:3.13-slim

ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PIP_NO_CACHE_DIR=1 \
    TRAINER_PORTAL_MODE=production DJANGO_STATIC_ROOT=/app/staticfiles

WORKDIR /app
COPY requirements.txt .
RUN pip install -r requirements.txt
COPY . .
# collectstatic runs with the production storage (DEBUG off) but without production's checks: no secret exists at
# build time; the real key comes from the environment at run time.
RUN TRAINER_PORTAL_MODE=embedded DJANGO_DEBUG=0 python manage.py collectstatic --noinput \
    && useradd --system --uid 10001 portal && mkdir -p /app/var && chown -R portal /app
USER portal
EXPOSE 8000
CMD ["gunicorn", "trainer_portal.wsgi:application", "--bind", "0.0.0.0:8000", "--workers", "3", "--access-logfile", "-"]
