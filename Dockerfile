# Trainer Portal image: web (gunicorn + whitenoise), worker, beat, cluster-watch and the migrate job share it.
# Runtime dependencies only (requirements.txt); .dockerignore keeps the tests, the sandbox cluster, benchmarks and
# development tooling out. Runs as a non-root numeric user with a read-only root filesystem (writes go to /tmp).
FROM python:3.13-slim

ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PIP_NO_CACHE_DIR=1 \
    TRAINER_PORTAL_MODE=production DJANGO_STATIC_ROOT=/app/staticfiles TRAINER_PORTAL_VAR_DIR=/tmp/portal

WORKDIR /app
COPY requirements.txt .
RUN pip install -r requirements.txt
COPY . .
# collectstatic runs with the production storage (DEBUG off) but without production's checks: no secret exists at
# build time; the real key comes from the environment at run time.
RUN TRAINER_PORTAL_MODE=embedded DJANGO_DEBUG=0 python manage.py collectstatic --noinput \
    && useradd --system --uid 10001 --no-create-home portal
USER 10001:10001
EXPOSE 8000
CMD ["gunicorn", "trainer_portal.wsgi:application", "--bind", "0.0.0.0:8000", "--workers", "3", "--threads", "4", \
     "--access-logfile", "-", "--worker-tmp-dir", "/tmp"]
