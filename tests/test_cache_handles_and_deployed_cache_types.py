"""A per-process cache used as a counter or a once-only marker, where the code does not say which cache it is
at the call (OG607):

- a Django cache handle an object keeps (``self.store = caches[alias]`` in ``__init__``) or a module-level name
  bound to one: ``self.store.incr(key)`` counts in whatever backend ``CACHES`` gives, and a settings module that
  inherits a local-memory default from its base keeps it per process;
- a Flask-Caching ``CACHE_TYPE`` read from the environment: the backend is what the deployment files set the
  variable to (a Kubernetes ConfigMap taken whole with ``envFrom``, a container's ``env``, a compose service's
  ``environment``); a variable they never set leaves the backend unknown."""
from __future__ import annotations

import pytest

from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

BASE_SETTINGS = """
    SECRET_KEY = "dev"
    ROOT_URLCONF = "desk.urls"
    INSTALLED_APPS = ["django.contrib.auth", "otp"]
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}
    """

LIVE_SETTINGS = """
    import os

    from .base import *  # noqa: F401,F403

    DEBUG = False
    {caches}
    """
SHARED_CACHES = ('CACHES = {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", '
                 '"LOCATION": os.environ["REDIS_URL"]}}')

KEPT_ON_SELF = """
    from django.core.cache import caches


    class CodeAttempts:
        def __init__(self, alias: str = "default", ceiling: int = 3) -> None:
            self.ceiling = ceiling
            self.store = caches[alias]

        def spend(self, phone: str) -> bool:
            key = f"otp:{phone}"
            self.store.add(key, 0, timeout=600)
            return self.store.incr(key) <= self.ceiling
    """

MODULE_HANDLE = """
    from django.core.cache import caches

    attempt_store = caches["default"]


    def spend(phone: str, ceiling: int = 3) -> bool:
        key = f"otp:{phone}"
        attempt_store.add(key, 0, timeout=600)
        return attempt_store.incr(key) <= ceiling
    """


@pytest.mark.parametrize("source, line", [(KEPT_ON_SELF, 13), (MODULE_HANDLE, 10)])
@pytest.mark.parametrize("caches, flagged", [("", True), (SHARED_CACHES, False)])
def test_a_django_cache_handle_kept_for_the_process(tmp_path, source, line, caches, flagged):
    write(tmp_path, {"desk/__init__.py": "", "desk/settings/__init__.py": "",
                     "desk/settings/base.py": BASE_SETTINGS,
                     "desk/settings/live.py": LIVE_SETTINGS.format(caches=caches),
                     "otp/__init__.py": "", "otp/attempts.py": source})
    assert findings(tmp_path, "otp/attempts.py", codes=("OG607",)) == ([(line, "OG607")] if flagged else [])


FLASK_CONFIG = """
    import os


    class Settings:
        CACHE_TYPE = os.environ.get("CACHE_TYPE", "SimpleCache")
        CACHE_DEFAULT_TIMEOUT = 600
    """

FLASK_EXTENSIONS = """
    from flask_caching import Cache

    cache = Cache()
    """

FLASK_APP = """
    from flask import Flask

    from .extensions import cache
    from .settings import Settings


    def create_app() -> Flask:
        app = Flask(__name__)
        app.config.from_object(Settings)
        cache.init_app(app)
        return app
    """

FLASK_RECEIPTS = """
    from .extensions import cache


    def first_receipt(receipt_id: str) -> bool:
        return bool(cache.add(f"receipt:{receipt_id}", 1, timeout=86400))
    """

CONFIG_MAP = """
    apiVersion: v1
    kind: ConfigMap
    metadata:
      name: tills-env
    data:
      CACHE_TYPE: {cache_type}
    """

DEPLOYMENT = """
    apiVersion: apps/v1
    kind: Deployment
    metadata:
      name: tills
    spec:
      replicas: 4
      template:
        spec:
          containers:
            - name: tills
              image: tills:1
              {environment}
    """
FROM_CONFIG_MAP = """envFrom:
                - configMapRef:
                    name: tills-env"""
FROM_ENV = """env:
                - name: CACHE_TYPE
                  value: {cache_type}"""

COMPOSE = """
    services:
      tills:
        build: .
        environment:
          CACHE_TYPE: {cache_type}
    """


def _flask_project(tmp_path, deployment: dict) -> None:
    write(tmp_path, {"tills/__init__.py": FLASK_APP, "tills/settings.py": FLASK_CONFIG,
                     "tills/extensions.py": FLASK_EXTENSIONS, "tills/receipts.py": FLASK_RECEIPTS, **deployment})


@pytest.mark.parametrize("cache_type, flagged", [("SimpleCache", True), ("RedisCache", False)])
@pytest.mark.parametrize("how", ["envFrom", "env", "compose"])
def test_a_flask_cache_type_the_deployment_sets(tmp_path, cache_type, flagged, how):
    if how == "envFrom":
        deployment = {"k8s/config.yaml": CONFIG_MAP.format(cache_type=cache_type),
                      "k8s/app.yaml": DEPLOYMENT.format(environment=FROM_CONFIG_MAP)}
    elif how == "env":
        deployment = {"k8s/app.yaml": DEPLOYMENT.format(environment=FROM_ENV.format(cache_type=cache_type))}
    else:
        deployment = {"docker-compose.yml": COMPOSE.format(cache_type=cache_type)}
    _flask_project(tmp_path, deployment)
    assert findings(tmp_path, "tills/receipts.py", codes=("OG607",)) == ([(6, "OG607")] if flagged else [])


def test_a_flask_cache_type_no_deployment_file_sets_is_unknown(tmp_path):
    _flask_project(tmp_path, {"k8s/app.yaml": DEPLOYMENT.format(environment="ports: [{containerPort: 8000}]")})
    assert findings(tmp_path, "tills/receipts.py", codes=("OG607",)) == []
