"""Settings for Trainer Portal, read from the environment.

Two modes, chosen by ``TRAINER_PORTAL_MODE``:

* ``embedded`` (default): everything on one machine with no external service — SQLite, a filesystem
  Celery broker, the sandbox cluster started by ``make run``. DEBUG is on and a throwaway secret key is used.
* ``production``: DEBUG off, a real ``DJANGO_SECRET_KEY`` is required, cookies are secure and
  ``manage.py check --deploy`` passes. Database and broker come from ``DATABASE_URL`` / ``CELERY_BROKER_URL``.

Nothing here touches the cluster or the network at import time.
"""

from __future__ import annotations

import base64
import os
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured
from django.utils.csp import CSP

from trainer_portal.sso import config as sso_config

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(os.environ.get("TRAINER_PORTAL_VAR_DIR", BASE_DIR / "var"))


def env_bool(name: str, default: bool) -> bool:
    """Return the boolean value of environment variable ``name`` (1/true/yes/on), or ``default`` if unset."""
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    return raw.strip().lower() in {"1", "true", "yes", "on"}


def env_list(name: str, default: list[str]) -> list[str]:
    """Return a comma-separated environment variable as a list of non-empty stripped strings."""
    raw = os.environ.get(name)
    if raw is None:
        return default
    return [item.strip() for item in raw.split(",") if item.strip()]


MODE = os.environ.get("TRAINER_PORTAL_MODE", "embedded")
if MODE not in {"embedded", "production"}:
    raise ImproperlyConfigured(f"TRAINER_PORTAL_MODE must be 'embedded' or 'production', got {MODE!r}")
EMBEDDED = MODE == "embedded"

DEBUG = env_bool("DJANGO_DEBUG", EMBEDDED)
# Embedded mode only: a fixed, obviously-insecure key so sessions survive restarts of the demo.
EMBEDDED_SECRET_KEY = "embedded-insecure-key-do-not-use-in-production-" + "x" * 16
# Keys that are public (in this repository or Django's docs) and so no secret at all.
KNOWN_PUBLIC_SECRET_KEYS = {EMBEDDED_SECRET_KEY, "change-me-to-50-random-characters", "build-only-not-secret"}


def secret_key_problem(key: str) -> str:
    """Return why ``key`` is not fit for production ("" when it is): missing, short, public or Django's default."""
    if not key:
        return "it is not set"
    if key in KNOWN_PUBLIC_SECRET_KEYS or key.startswith("django-insecure"):
        return "it is a published example or Django's insecure default"
    if len(key) < 50 or len(set(key)) < 5:
        return f"it is too short or too simple ({len(key)} characters, {len(set(key))} distinct; use 50+ random ones)"
    return ""


SECRET_KEY = os.environ.get("DJANGO_SECRET_KEY", "")
if not EMBEDDED:
    if DEBUG:
        raise ImproperlyConfigured("DJANGO_DEBUG must be off in production mode (it shows code and settings).")
    if problem := secret_key_problem(SECRET_KEY):
        raise ImproperlyConfigured(
            f"DJANGO_SECRET_KEY is refused in production mode: {problem}. "
            'Generate one with: python -c "import secrets; print(secrets.token_urlsafe(50))"'
        )
elif not SECRET_KEY:
    SECRET_KEY = EMBEDDED_SECRET_KEY

# Kubeconfigs stored in the portal (a Cluster connected by "kubeconfig") are encrypted with Fernet under this key:
# 32 url-safe base64 bytes, as `python -c "from cryptography.fernet import Fernet; print(Fernet.generate_key()
# .decode())"` prints. Several keys, comma-separated: the first encrypts, every one decrypts (key rotation).
# Production requires it; embedded mode derives one from SECRET_KEY when it is unset.
ENCRYPTION_KEYS = env_list("TRAINER_PORTAL_ENCRYPTION_KEY", [])


def encryption_key_problem(keys: list[str]) -> str:
    """Return why ``keys`` cannot encrypt stored kubeconfigs ("" when they can): none, or one not a Fernet key."""
    if not keys:
        return "it is not set"
    for number, key in enumerate(keys, start=1):
        try:
            raw = base64.urlsafe_b64decode(key.encode("ascii"))
        except (ValueError, UnicodeEncodeError):
            raw = b""
        if len(raw) != 32:
            return (f"key {number} is not a Fernet key (32 url-safe base64-encoded bytes, 44 characters); generate "
                    "one with: python -c \"from cryptography.fernet import Fernet; print(Fernet.generate_key()"
                    ".decode())\"")
    return ""


if not EMBEDDED and (problem := encryption_key_problem(ENCRYPTION_KEYS)):
    raise ImproperlyConfigured(f"TRAINER_PORTAL_ENCRYPTION_KEY is refused in production mode: {problem}.")
if EMBEDDED and ENCRYPTION_KEYS and (problem := encryption_key_problem(ENCRYPTION_KEYS)):
    raise ImproperlyConfigured(f"TRAINER_PORTAL_ENCRYPTION_KEY is refused: {problem}.")

# Set where a TLS proxy that we run (docker-compose: caddy) is the only way in: see SECURE_PROXY_SSL_HEADER.
BEHIND_TLS_PROXY = env_bool("DJANGO_BEHIND_TLS_PROXY", False)

ALLOWED_HOSTS = env_list("DJANGO_ALLOWED_HOSTS", ["127.0.0.1", "localhost", "[::1]", "testserver"])
CSRF_TRUSTED_ORIGINS = env_list("DJANGO_CSRF_TRUSTED_ORIGINS", [])

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "django_htmx",
    "trainer_portal",
    "trainer_portal.cluster",
    "trainer_portal.health",
    "trainer_portal.tokens",
    "trainer_portal.sso",
    "runtimes",
    "jobs",
    "forecast",
    "queues",
    "notifications",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "django.middleware.csp.ContentSecurityPolicyMiddleware",
    "trainer_portal.middleware.PermissionsPolicyMiddleware",
    # Before anything that checks the Host header: the container health check calls http://127.0.0.1/healthz.
    "trainer_portal.middleware.HealthCheckMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "trainer_portal.api.limits.ApiBodyLimitMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    # Re-checks SSO sessions with the identity provider when their ID token's trust period ends (no-op otherwise).
    "trainer_portal.sso.middleware.SsoSessionRefresh",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    # Last, so it is the first to see an exception raised by a view.
    "trainer_portal.middleware.DatabaseUnavailableMiddleware",
]

ROOT_URLCONF = "trainer_portal.urls"
WSGI_APPLICATION = "trainer_portal.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "trainer_portal.context_processors.portal",
                "trainer_portal.cluster.context_processors.cluster_picker",
            ],
        },
    },
]

DATABASES = {
    "default": dj_database_url.parse(
        os.environ.get("DATABASE_URL", f"sqlite:///{BASE_DIR / 'db.sqlite3'}"),
        conn_max_age=int(os.environ.get("DATABASE_CONN_MAX_AGE", "0")),
    )
}
# Passwords shipped in examples and tutorials; production refuses them (an empty one is allowed: trust, peer and
# certificate authentication need none).
KNOWN_DEFAULT_DATABASE_PASSWORDS = frozenset({"portal", "postgres", "password", "change-me", "changeme", "secret"})
if not EMBEDDED and DATABASES["default"].get("PASSWORD") in KNOWN_DEFAULT_DATABASE_PASSWORDS:
    raise ImproperlyConfigured(
        "DATABASE_URL is refused in production mode: its password is a published default. "
        'Generate one with: python -c "import secrets; print(secrets.token_urlsafe(32))"'
    )
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # SQLite has one writer at a time. A deferred transaction that has read cannot take the write lock while another
    # writer holds it and fails at once ("database is locked", no busy wait); IMMEDIATE takes the lock on BEGIN, so
    # writers queue on the busy timeout instead. WAL lets reads go on during a write; NORMAL sync is safe with WAL.
    DATABASES["default"].setdefault("OPTIONS", {}).update({
        "transaction_mode": "IMMEDIATE",
        "timeout": float(os.environ.get("DATABASE_SQLITE_TIMEOUT", "20")),
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
    })
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# One cache for every web process when DJANGO_CACHE_URL (redis://…) is set; else per process (embedded: one process).
if os.environ.get("DJANGO_CACHE_URL"):
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache",
                          "LOCATION": os.environ["DJANGO_CACHE_URL"]}}

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = Path(os.environ.get("DJANGO_STATIC_ROOT", BASE_DIR / "staticfiles"))
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": (
            "django.contrib.staticfiles.storage.StaticFilesStorage"
            if DEBUG
            else "whitenoise.storage.CompressedManifestStaticFilesStorage"
        )
    },
}

# In embedded mode static files are served straight from the app directories (no collectstatic needed).
WHITENOISE_USE_FINDERS = DEBUG
WHITENOISE_AUTOREFRESH = DEBUG

# API tokens: a new token is valid this many days unless its owner asks for fewer (at most the maximum).
API_TOKEN_LIFETIME_DAYS = int(os.environ.get("TRAINER_PORTAL_TOKEN_DAYS", "30"))
API_TOKEN_MAX_DAYS = int(os.environ.get("TRAINER_PORTAL_TOKEN_MAX_DAYS", "365"))

# Single sign-on (OpenID Connect, mozilla-django-oidc): off unless TRAINER_PORTAL_OIDC_ISSUER is set
# (trainer_portal/sso/config.py, docs/operations.md "Single sign-on"). The backend and the session middleware are
# always installed and do nothing while SSO is off.
TRAINER_PORTAL_SSO = sso_config.load()
if sso_problems := TRAINER_PORTAL_SSO.problems():
    raise ImproperlyConfigured("Single sign-on is misconfigured: " + "; ".join(sso_problems))
AUTHENTICATION_BACKENDS = [
    "trainer_portal.sso.backends.PortalOIDCBackend",
    "django.contrib.auth.backends.ModelBackend",
]
OIDC_USE_PKCE = True
OIDC_PKCE_CODE_CHALLENGE_METHOD = "S256"
OIDC_USE_NONCE = True
OIDC_STORE_ID_TOKEN = True  # the id_token_hint of RP-initiated logout
OIDC_RP_SIGN_ALGO = os.environ.get("TRAINER_PORTAL_OIDC_SIGN_ALGO", "RS256")
OIDC_AUTHENTICATION_CALLBACK_URL = "oidc_authentication_callback"
LOGIN_REDIRECT_URL_FAILURE = "login"

# What a data scientist may see: the portal's namespace grants ("grants"), the cluster's RBAC for their identity
# ("rbac": a SubjectAccessReview per namespace, trainer_portal/cluster/access.py), or both ("grants+rbac").
TRAINER_PORTAL_VISIBILITY = os.environ.get("TRAINER_PORTAL_VISIBILITY", "grants")
if TRAINER_PORTAL_VISIBILITY not in ("grants", "rbac", "grants+rbac"):
    raise ImproperlyConfigured("TRAINER_PORTAL_VISIBILITY must be grants, rbac or grants+rbac, "
                               f"got {TRAINER_PORTAL_VISIBILITY!r}")
# Labels/annotations a TrainJob's creator is read from, first match wins (comma-separated); empty: the built-in list
# (trainer.kubeflow.org/creator, …). Without any, the creator is the tool of the creating field manager.
TRAINER_PORTAL_CREATOR_KEYS = env_list("TRAINER_PORTAL_CREATOR_KEYS", [])
TRAINER_PORTAL_RBAC_USERNAME_FROM = os.environ.get("TRAINER_PORTAL_RBAC_USERNAME_FROM", "username")
TRAINER_PORTAL_RBAC_USER_PREFIX = os.environ.get("TRAINER_PORTAL_RBAC_USER_PREFIX", "")
TRAINER_PORTAL_RBAC_GROUP_PREFIX = os.environ.get("TRAINER_PORTAL_RBAC_GROUP_PREFIX", "")
TRAINER_PORTAL_RBAC_CACHE_SECONDS = float(os.environ.get("TRAINER_PORTAL_RBAC_CACHE_SECONDS", "60"))
TRAINER_PORTAL_RBAC_BUDGET_SECONDS = float(os.environ.get("TRAINER_PORTAL_RBAC_BUDGET_SECONDS", "3"))

# Live pages (trainer_portal/live, docs/operations.md): the path pages open their server-sent event stream at, served
# by the ASGI server (uvicorn trainer_portal.asgi:application) behind the same host. Empty: pages poll (make run).
TRAINER_PORTAL_LIVE_STREAM = os.environ.get("TRAINER_PORTAL_LIVE_STREAM", "")
TRAINER_PORTAL_LIVE_TICK_SECONDS = float(os.environ.get("TRAINER_PORTAL_LIVE_TICK_SECONDS", "0.1"))
TRAINER_PORTAL_LIVE_THREADS = int(os.environ.get("TRAINER_PORTAL_LIVE_THREADS", "4"))
TRAINER_PORTAL_LIVE_MAX_STREAMS = int(os.environ.get("TRAINER_PORTAL_LIVE_MAX_STREAMS", "5000"))
TRAINER_PORTAL_LIVE_STREAM_SECONDS = float(os.environ.get("TRAINER_PORTAL_LIVE_STREAM_SECONDS", "600"))

LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "login"

# Uploaded policies are capped at 1 MiB by the import code; keep Django's own limit just above it so the
# import code, not Django, produces the (clearer) error message.
DATA_UPLOAD_MAX_MEMORY_SIZE = 2 * 1024 * 1024
FILE_UPLOAD_MAX_MEMORY_SIZE = 2 * 1024 * 1024

REST_FRAMEWORK = {
    # Token first: DRF answers a request without valid credentials with the first class's challenge, so that is
    # 401 with "WWW-Authenticate: Token" (session authentication has no challenge and would make it a 403).
    "DEFAULT_AUTHENTICATION_CLASSES": [
        # The token scheme first: DRF answers 401 with its WWW-Authenticate when the first class has one.
        "trainer_portal.tokens.authentication.ApiTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    # Client address for the rate limits: the last X-Forwarded-For entry added by this many trusted proxies
    # (1 behind the compose TLS proxy); 0 = REMOTE_ADDR only.
    "NUM_PROXIES": int(os.environ.get("DJANGO_NUM_PROXIES", "1" if BEHIND_TLS_PROXY else "0")),
    "DEFAULT_THROTTLE_RATES": {"auth": os.environ.get("TRAINER_PORTAL_AUTH_RATE", "20/min")},
    "DEFAULT_PERMISSION_CLASSES": ["trainer_portal.permissions.IsViewer"],
    "DEFAULT_PAGINATION_CLASS": "rest_framework.pagination.LimitOffsetPagination",
    "PAGE_SIZE": 50,
    "DEFAULT_SCHEMA_CLASS": "trainer_portal.api.schema.PortalAutoSchema",
    "EXCEPTION_HANDLER": "trainer_portal.api.exceptions.exception_handler",
    "DEFAULT_RENDERER_CLASSES": ["trainer_portal.api.renderers.SafeJSONRenderer"],
    "DEFAULT_PARSER_CLASSES": ["trainer_portal.api.parsers.BoundedJSONParser"],
    "UNAUTHENTICATED_USER": "django.contrib.auth.models.AnonymousUser",
}
if DEBUG:
    REST_FRAMEWORK["DEFAULT_RENDERER_CLASSES"].append("rest_framework.renderers.BrowsableAPIRenderer")

SPECTACULAR_SETTINGS = {
    "TITLE": "Trainer Portal API",
    "DESCRIPTION": "Author, validate, preview and sync Kubeflow Trainer ClusterTrainingRuntime scheduling policies.",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    # The schema holds no data, but every page checks who is asking: any portal role may read it.
    "SERVE_PERMISSIONS": ["trainer_portal.permissions.IsPortalUser"],
    "COMPONENT_SPLIT_REQUEST": True,
    # Swagger UI and Redoc from the pinned drf-spectacular-sidecar package, served by the portal itself: the docs
    # work offline and nothing is fetched from a CDN (the CSP would refuse it anyway).
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "SWAGGER_UI_SETTINGS": {"deepLinking": True, "validatorUrl": None},
    # Two fields are named "state" (policy sync state, TrainJob admission state): name both enums explicitly.
    # Shared error statuses, `?dialect` and the OpenAPI 3.0 fixes live in trainer_portal.api.schema; the hook runs
    # after drf-spectacular's own enum hook so it sees the finished document.
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "trainer_portal.api.schema.postprocess_schema",
    ],
    "ENUM_NAME_OVERRIDES": {
        "StateEnum": "runtimes.choices.SyncState",
        "AdmissionStateEnum": "jobs.choices.AdmissionState",
        "ChannelKindEnum": "notifications.choices.ChannelKind",
        "PendingLineKindEnum": ["workload", "hidden"],
    },
}

# --- Celery -------------------------------------------------------------------------------------------
# Embedded mode uses the atomic filesystem transport (trainer_portal/broker.py) so a real worker process runs
# without Redis; kombu's own filesystem:// lets a consumer read a half-written message and kills the worker.
CELERY_BROKER_URL = os.environ.get("CELERY_BROKER_URL", "atomicfs://")
CELERY_BROKER_TRANSPORT_OPTIONS = (
    {
        "data_folder_in": str(VAR_DIR / "broker"),
        "data_folder_out": str(VAR_DIR / "broker"),
        "processed_folder": str(VAR_DIR / "broker-processed"),
        "control_folder": str(VAR_DIR / "broker-control"),
        "store_processed": False,
        # The default 1 s poll made an embedded bulk apply of 500 policies take 26 s instead of ~3 s.
        "polling_interval": 0.05,
    }
    if CELERY_BROKER_URL.startswith(("atomicfs", "filesystem"))
    else {"visibility_timeout": 3600}
)
CELERY_RESULT_BACKEND = os.environ.get("CELERY_RESULT_BACKEND") or None
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_ALWAYS_EAGER = env_bool("CELERY_TASK_ALWAYS_EAGER", False)
CELERY_TASK_DEFAULT_QUEUE = os.environ.get("CELERY_TASK_DEFAULT_QUEUE", "trainer-portal")
CELERY_BEAT_SCHEDULE = {
    "policies-drift-check": {"task": "runtimes.tasks.policies_drift_check_task", "schedule": 300.0},
    "policies-requeue-unfinished": {"task": "runtimes.tasks.policies_requeue_unfinished_task", "schedule": 600.0},
    "cluster-topology-refresh": {"task": "trainer_portal.cluster.tasks.topology_refresh_task", "schedule": 120.0},
    # Pages and the API show what this check stored; they never probe a cluster themselves.
    "cluster-health-check": {
        "task": "trainer_portal.cluster.tasks.cluster_check_task", "schedule": 60.0, "options": {"expires": 120},
    },
    # Beat records its heartbeat when it publishes; the pulse makes it publish every 10 s. Expired pulses (no worker
    # for a while) are dropped, so they never pile up in the queue.
    # Estimated starts: recomputed per cluster when its queue, running jobs or snapshot changed (forecast app).
    "forecast-refresh": {"task": "forecast.tasks.forecast_refresh_task", "schedule": 60.0, "options": {"expires": 120}},
    # Notifications: read the outbox sources, derive "waiting longer than N minutes", send what is due.
    "notifications-tick": {
        "task": "notifications.tasks.notifications_tick_task", "schedule": 15.0, "options": {"expires": 60},
    },
    "portal-beat-pulse": {
        "task": "trainer_portal.health.tasks.beat_pulse_task", "schedule": 10.0, "options": {"expires": 30},
    },
}

# --- Cluster connection ---------------------------------------------------------------------------------
# KUBECONFIG path (and optional context), or in-cluster service account when TRAINER_PORTAL_IN_CLUSTER=1.
KUBE_CONFIG_PATH = os.environ.get("TRAINER_PORTAL_KUBECONFIG", os.environ.get("KUBECONFIG", ""))
KUBE_CONTEXT = os.environ.get("TRAINER_PORTAL_KUBE_CONTEXT", "")
KUBE_IN_CLUSTER = env_bool("TRAINER_PORTAL_IN_CLUSTER", False)
KUBE_REQUEST_TIMEOUT_SECONDS = float(os.environ.get("TRAINER_PORTAL_KUBE_TIMEOUT", "10"))
KUBE_FIELD_MANAGER = "trainer-portal"
# The longest a web request waits on a cluster (dry-run, apply, drift check) before answering 503 with Retry-After,
# and the timeout of each background probe call (connection, APIs, CRD schema, gates, RBAC).
CLUSTER_ACTION_TIMEOUT_SECONDS = float(os.environ.get("TRAINER_PORTAL_CLUSTER_ACTION_TIMEOUT", "5"))
CLUSTER_PROBE_TIMEOUT_SECONDS = float(os.environ.get("TRAINER_PORTAL_CLUSTER_PROBE_TIMEOUT", "5"))
# How often web processes look for a newer live topology snapshot in the database (one indexed query).
SNAPSHOT_RECHECK_MS = float(os.environ.get("TRAINER_PORTAL_SNAPSHOT_RECHECK_MS", "250"))
# Node label that marks a "network block"; no standard key exists (docs/reference/kubernetes-apis.md §6.9).
TOPOLOGY_BLOCK_KEY = os.environ.get("TRAINER_PORTAL_BLOCK_KEY", "cloud.provider.com/topology-block")
# The Lease `manage.py cluster_watch` processes elect their leader with (coordination.k8s.io/v1).
CLUSTER_WATCH_LEASE_NAMESPACE = os.environ.get("TRAINER_PORTAL_LEASE_NAMESPACE", "default")
CLUSTER_WATCH_LEASE_NAME = os.environ.get("TRAINER_PORTAL_LEASE_NAME", "trainer-portal-cluster-watch")

# Trainer feature gates the policy validation assumes (docs/reference/kubernetes-apis.md §2.3 and §6.4/6.5,
# docs/decisions.md):
# composite PodGroups (TrainJobCompositePodGroup) let level 1 and level 2 combine; v2.4 caps level-3 replicas at 1.
SCHEDULING_COMPOSITE_ENABLED = env_bool("TRAINER_PORTAL_COMPOSITE_ENABLED", False)
SCHEDULING_MAX_LEVEL3_REPLICAS = int(os.environ.get("TRAINER_PORTAL_MAX_LEVEL3_REPLICAS", "1"))

# TrainJob tracking: finished and deleted TrainJobs are kept this many days, then pruned by the tracker.
JOB_RETENTION_DAYS = int(os.environ.get("TRAINER_PORTAL_JOB_RETENTION_DAYS", "30"))
# A cluster whose topology snapshot is older than this counts as having a stale watcher (a notification event).
WATCHER_STALE_SECONDS = float(os.environ.get("TRAINER_PORTAL_WATCHER_STALE_SECONDS", "300"))

# --- Notifications (docs/operations.md "Notifications") ------------------------------------------------
# Outgoing e-mail of notifications (SMTP; STARTTLS and login when set).
NOTIFICATIONS_SMTP_HOST = os.environ.get("TRAINER_PORTAL_SMTP_HOST", "localhost")
NOTIFICATIONS_SMTP_PORT = int(os.environ.get("TRAINER_PORTAL_SMTP_PORT", "25"))
NOTIFICATIONS_SMTP_USER = os.environ.get("TRAINER_PORTAL_SMTP_USER", "")
NOTIFICATIONS_SMTP_PASSWORD = os.environ.get("TRAINER_PORTAL_SMTP_PASSWORD", "")
NOTIFICATIONS_SMTP_STARTTLS = env_bool("TRAINER_PORTAL_SMTP_STARTTLS", False)
NOTIFICATIONS_EMAIL_FROM = os.environ.get("TRAINER_PORTAL_EMAIL_FROM", "trainer-portal@localhost")
# Where links in notifications point (the portal's public URL, no trailing slash).
NOTIFICATIONS_BASE_URL = os.environ.get("TRAINER_PORTAL_BASE_URL", "")
# Attempts per delivery before it is given up (exponential backoff from the initial delay, capped).
NOTIFICATIONS_MAX_ATTEMPTS = int(os.environ.get("TRAINER_PORTAL_NOTIFY_MAX_ATTEMPTS", "8"))
NOTIFICATIONS_RETRY_INITIAL_SECONDS = float(os.environ.get("TRAINER_PORTAL_NOTIFY_RETRY_INITIAL", "5"))
NOTIFICATIONS_RETRY_MAX_SECONDS = float(os.environ.get("TRAINER_PORTAL_NOTIFY_RETRY_MAX", "900"))
# More than DIGEST_THRESHOLD deliveries pending for one channel within DIGEST_WINDOW seconds go out as one digest.
NOTIFICATIONS_DIGEST_THRESHOLD = int(os.environ.get("TRAINER_PORTAL_NOTIFY_DIGEST_THRESHOLD", "10"))
NOTIFICATIONS_DIGEST_WINDOW_SECONDS = float(os.environ.get("TRAINER_PORTAL_NOTIFY_DIGEST_WINDOW", "300"))
# Timeout of one webhook or chat call; webhooks to link-local/metadata addresses are refused unless allowed.
NOTIFICATIONS_HTTP_TIMEOUT_SECONDS = float(os.environ.get("TRAINER_PORTAL_NOTIFY_HTTP_TIMEOUT", "10"))
NOTIFICATIONS_ALLOW_LINK_LOCAL = env_bool("TRAINER_PORTAL_NOTIFY_ALLOW_LINK_LOCAL", False)
# Chat services apprise may reach (URL schemes); anything else apprise knows (files, desktop, generic JSON) is refused.
NOTIFICATIONS_APPRISE_SCHEMES = tuple(os.environ.get(
    "TRAINER_PORTAL_NOTIFY_APPRISE_SCHEMES", "slack,msteams,workflow,workflows,mmost,mmosts,discord,rocket,rockets,"
    "matrix,matrixs,zulip,tgram,gchat").split(","))

# --- Forecasts (docs/forecasts.md) ------------------------------------------------------------------------
FORECAST_HISTORY_DAYS = float(os.environ.get("TRAINER_PORTAL_FORECAST_HISTORY_DAYS", "30"))
FORECAST_MAX_AGE_SECONDS = float(os.environ.get("TRAINER_PORTAL_FORECAST_MAX_AGE_SECONDS", "600"))
FORECAST_STALE_SECONDS = float(os.environ.get("TRAINER_PORTAL_FORECAST_STALE_SECONDS", "600"))
FORECAST_DEBOUNCE_SECONDS = float(os.environ.get("TRAINER_PORTAL_FORECAST_DEBOUNCE_SECONDS", "10"))
FORECAST_MAX_WAITING = int(os.environ.get("TRAINER_PORTAL_FORECAST_MAX_WAITING", "2000"))
FORECAST_ARRIVALS_MAX_WAITING = int(os.environ.get("TRAINER_PORTAL_FORECAST_ARRIVALS_MAX_WAITING", "0"))
FORECAST_BACKTEST_SECONDS = float(os.environ.get("TRAINER_PORTAL_FORECAST_BACKTEST_SECONDS", "3600"))
FORECAST_ADVICE_TARGET_SECONDS = float(os.environ.get("TRAINER_PORTAL_FORECAST_ADVICE_TARGET_SECONDS", "3600"))
FORECAST_SEED = int(os.environ.get("TRAINER_PORTAL_FORECAST_SEED", "1"))

# --- Production hardening ----------------------------------------------------------------------------
if not EMBEDDED:
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True
    SECURE_SSL_REDIRECT = env_bool("DJANGO_SECURE_SSL_REDIRECT", True)
    SECURE_HSTS_SECONDS = int(os.environ.get("DJANGO_SECURE_HSTS_SECONDS", "31536000"))
    SECURE_HSTS_INCLUDE_SUBDOMAINS = True
    SECURE_HSTS_PRELOAD = True
    # /healthz answers plain HTTP on any host name, for the container health check (HealthCheckMiddleware);
    # /metrics too, for Prometheus scraping the pod's address (it checks its own bearer token).
    SECURE_REDIRECT_EXEMPT = [r"^healthz$", r"^metrics$"]
    # Behind the TLS proxy (docker-compose: caddy) only: it sets X-Forwarded-Proto itself, and gunicorn is
    # reachable from nowhere else. Exposed directly, a client could claim https with that header, so it is opt-in.
    if BEHIND_TLS_PROXY:
        SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
SESSION_COOKIE_HTTPONLY = True
X_FRAME_OPTIONS = "DENY"
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
SECURE_CROSS_ORIGIN_OPENER_POLICY = "same-origin"
# Strict: scripts, styles, images and connections from the portal itself only; no inline script or style anywhere
# (htmx's own indicator style is off, see base.html; the Redoc page alone relaxes styles, see api_docs.py).
SECURE_CSP = {
    "default-src": [CSP.SELF],
    "script-src": [CSP.SELF],
    "style-src": [CSP.SELF],
    "img-src": [CSP.SELF, "data:"],
    "font-src": [CSP.SELF],
    "connect-src": [CSP.SELF],
    "object-src": [CSP.NONE],
    "base-uri": [CSP.NONE],
    # A form may lead to the identity provider: logging out redirects there (RP-initiated logout), and browsers
    # apply form-action to a form's redirects too.
    "form-action": [CSP.SELF, *TRAINER_PORTAL_SSO.origins()],
    "frame-ancestors": [CSP.NONE],
}
# Browser features the portal never uses are switched off for it and anything it could embed.
PERMISSIONS_POLICY = (
    "accelerometer=(), camera=(), geolocation=(), gyroscope=(), magnetometer=(), microphone=(), payment=(), usb=(), "
    "browsing-topics=()"
)

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {"forbidden_without_traceback": {"()": "trainer_portal.log_filters.ForbiddenWithoutTraceback"}},
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": os.environ.get("LOG_LEVEL", "INFO")},
    "loggers": {
        "django.db.backends": {"level": "WARNING"},
        "django.request": {"filters": ["forbidden_without_traceback"]},
    },
}

# Kueue queues (the queues app): pages and the API say "as of … (stale)" when the queue watcher's heartbeat is older.
TRAINER_PORTAL_QUEUES_STALE_SECONDS = float(os.environ.get("TRAINER_PORTAL_QUEUES_STALE_SECONDS", "15"))
# --- Metrics (docs/monitoring.md) ------------------------------------------------------------------------------
# /metrics answers a scrape that sends "Authorization: Bearer <token>"; without a token it is closed (403) unless
# TRAINER_PORTAL_METRICS_OPEN is on (a network policy then decides who reaches it).
TRAINER_PORTAL_METRICS_TOKEN = os.environ.get("TRAINER_PORTAL_METRICS_TOKEN", "")
TRAINER_PORTAL_METRICS_OPEN = env_bool("TRAINER_PORTAL_METRICS_OPEN", False)
# Time to admission is reported over the jobs admitted within this trailing window (a gauge histogram).
TRAINER_PORTAL_METRICS_WINDOW_SECONDS = int(os.environ.get("TRAINER_PORTAL_METRICS_WINDOW_SECONDS", "3600"))
# Scrapes within this many seconds share one computation through the cache (0: compute every scrape).
TRAINER_PORTAL_METRICS_CACHE_SECONDS = float(os.environ.get("TRAINER_PORTAL_METRICS_CACHE_SECONDS", "5"))
# Cardinality caps: the most populous namespaces, runtimes and queues keep their name, the rest are "other".
TRAINER_PORTAL_METRICS_MAX_NAMESPACES = int(os.environ.get("TRAINER_PORTAL_METRICS_MAX_NAMESPACES", "50"))
TRAINER_PORTAL_METRICS_MAX_RUNTIMES = int(os.environ.get("TRAINER_PORTAL_METRICS_MAX_RUNTIMES", "30"))
TRAINER_PORTAL_METRICS_MAX_QUEUES = int(os.environ.get("TRAINER_PORTAL_METRICS_MAX_QUEUES", "50"))
# At most this many label sets of the time-to-admission histogram (17 series each); the rest fold into "other".
TRAINER_PORTAL_METRICS_MAX_HISTOGRAMS = int(os.environ.get("TRAINER_PORTAL_METRICS_MAX_HISTOGRAMS", "200"))
