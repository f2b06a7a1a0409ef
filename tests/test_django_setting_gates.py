"""OG201: a scheduler that only starts where a Django setting says so, and the deployment sets it for one process.

``ready()`` returns early ``if not settings.RUN_BILLING_CLOCK`` before calling ``start_clock()``, which adds the
jobs; the settings module reads ``RUN_BILLING_CLOCK = _flag("RUN_BILLING_CLOCK")`` through a helper that parses
the variable (``.strip().lower() in {"1", "true", ...}``); the manifest sets it to ``"true"`` only in a Deployment
of one replica running one gunicorn worker.  The jobs run in that one process.  Set in a Deployment of two
replicas, or with no gate at all, they run in every one.
"""
from __future__ import annotations

import pytest
from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

SETTINGS = """\
    import os


    def _flag(name, default=False):
        return os.environ.get(name, str(default)).strip().lower() in {"1", "true", "yes", "on"}


    INSTALLED_APPS = ["django.contrib.contenttypes", "billing"]
    RUN_BILLING_CLOCK = _flag("RUN_BILLING_CLOCK")
"""

APPS = """\
    from django.apps import AppConfig
    from django.conf import settings


    class BillingConfig(AppConfig):
        name = "billing"

        def ready(self):
            {gate}
            from .clock import start_clock

            start_clock()
"""

CLOCK = """\
    from apscheduler.schedulers.background import BackgroundScheduler
    from django.core.mail import send_mail


    def remind_overdue():
        send_mail("Overdue", "Please pay", "billing@example.com", ["customer@example.com"])


    def start_clock():
        clock = BackgroundScheduler()
        clock.add_job(remind_overdue, "cron", hour=9)
        clock.start()
"""

MANIFEST = """\
    apiVersion: apps/v1
    kind: Deployment
    metadata:
      name: billing-web
    spec:
      replicas: 3
      template:
        spec:
          containers:
            - name: web
              image: example/billing
              command: ["gunicorn", "site.wsgi:application", "--workers", "4"]
              env:
                - name: RUN_BILLING_CLOCK
                  value: "false"
    ---
    apiVersion: apps/v1
    kind: Deployment
    metadata:
      name: billing-clock
    spec:
      replicas: {clock_replicas}
      template:
        spec:
          containers:
            - name: clock
              image: example/billing
              command: ["gunicorn", "site.wsgi:application", "--workers", "1"]
              env:
                - name: RUN_BILLING_CLOCK
                  value: "true"
"""

GATE = "if not settings.RUN_BILLING_CLOCK:\n                return"


@pytest.mark.parametrize("gate, clock_replicas, reported", [
    (GATE, 1, []),
    (GATE, 2, [(5, "OG201")]),
    ("pass", 1, [(5, "OG201")]),
])
def test_a_scheduler_started_only_where_a_setting_the_deployment_pins_says_so(tmp_path, gate, clock_replicas, reported):
    write(tmp_path, {
        "site/__init__.py": "",
        "site/settings.py": SETTINGS,
        "billing/__init__.py": "",
        "billing/apps.py": APPS.replace("{gate}", gate),
        "billing/clock.py": CLOCK,
        "k8s/deployment.yaml": MANIFEST.replace("{clock_replicas}", str(clock_replicas)),
    })
    assert findings(tmp_path, "billing/clock.py") == reported


MODULE_SETTINGS = """\
    import os


    def _bool(name, default=False):
        raw = os.environ.get(name)
        if raw is None:
            return default
        return raw.strip().lower() in {"1", "true", "yes", "on"}


    RUN_CLOCK = _bool("RUN_BILLING_CLOCK")
"""

LIFESPAN = """\
    from contextlib import asynccontextmanager

    from fastapi import FastAPI

    from billing import settings
    from billing.clock import start_clock


    @asynccontextmanager
    async def lifespan(app):
        if settings.RUN_CLOCK:
            start_clock()
        yield


    app = FastAPI(lifespan=lifespan)
"""


@pytest.mark.parametrize("clock_replicas, reported", [(1, []), (2, [(5, "OG201")])])
def test_a_gate_read_off_a_settings_module_of_the_project(tmp_path, clock_replicas, reported):
    write(tmp_path, {
        "billing/__init__.py": "",
        "billing/settings.py": MODULE_SETTINGS,
        "billing/clock.py": CLOCK,
        "billing/main.py": LIFESPAN,
        "k8s/deployment.yaml": MANIFEST.replace("{clock_replicas}", str(clock_replicas)).replace(
            "gunicorn\", \"site.wsgi:application\", \"--workers\", \"4\"", "uvicorn\", \"billing.main:app\"").replace(
            "gunicorn\", \"site.wsgi:application\", \"--workers\", \"1\"", "uvicorn\", \"billing.main:app\""),
    })
    assert findings(tmp_path, "billing/clock.py") == reported
