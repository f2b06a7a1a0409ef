"""A scheduler a module binds to ``None`` until it is configured (``scheduler = None``, then ``scheduler =
APScheduler()`` under an ``if``) is that scheduler where another module imports it: its decorated jobs are
jobs (OG201)."""
from __future__ import annotations

import pytest

from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

CONFIG = """\
    import os

    from flask import Flask
    from flask_apscheduler import APScheduler

    app = Flask(__name__)
    BROKER = os.environ.get("BROKER_URL")

    scheduler = None
    if not BROKER:
        scheduler = {made}
        scheduler.init_app(app)
        scheduler.start()
"""

JOBS = """\
    from pantry.config import app, scheduler
    from pantry.mail import send_digest

    if scheduler is not None:

        @scheduler.task("cron", id="digest", hour=6)
        def morning_digest():
            with app.app_context():
                send_digest()
"""

MAIL = """\
    import smtplib


    def send_digest():
        with smtplib.SMTP("mail") as server:
            server.sendmail("a@x", ["b@x"], "digest")
"""


@pytest.mark.parametrize("made, expected", [("APScheduler()", [(7, "OG201")]), ("None", [])])
def test_a_scheduler_configured_under_an_if(tmp_path, made, expected):
    write(tmp_path, {"pyproject.toml": "[project]\nname = 'pantry'\n", "pantry/__init__.py": "",
                     "pantry/config.py": CONFIG.format(made=made), "pantry/jobs.py": JOBS, "pantry/mail.py": MAIL})
    assert findings(tmp_path, "pantry/jobs.py") == expected
