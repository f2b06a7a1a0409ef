"""OG603: a fixture loaded at start-up when its rows are missing.

``if not Plan.objects.exists(): call_command("loaddata", "initial_plans")`` in ``AppConfig.ready()``: every
replica (every worker) booting together sees no plans and loads the fixture, whose rows collide on their primary
keys.  Under a transaction-scoped advisory lock held around the check and the load, the replicas take turns.
"""
from __future__ import annotations

import pytest
from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

APPS = """\
    from django.apps import AppConfig
    from django.core.management import call_command
    from django.db import connection, transaction


    class BillingConfig(AppConfig):
        name = "billing"

        def ready(self):
            from billing.models import Plan

            with transaction.atomic():
                {lock}
                if not Plan.objects.exists():
                    call_command("loaddata", "initial_plans", verbosity=0)
"""


@pytest.mark.parametrize("lock, expected", [
    ("pass", [(14, "OG603")]),
    ('connection.cursor().execute("SELECT pg_advisory_xact_lock(7301)")', []),
])
def test_a_fixture_loaded_when_its_rows_are_missing(tmp_path, lock, expected):
    write(tmp_path, {"billing/__init__.py": "", "billing/apps.py": APPS.replace("{lock}", lock)})
    assert findings(tmp_path, "billing/apps.py", codes=("OG603",)) == expected
