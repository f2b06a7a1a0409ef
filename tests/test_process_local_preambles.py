"""OG201: a claim still leads a job when what runs before it stays inside the process (Django's
``close_old_connections()``, a call whose every call is followed and does nothing outside); a call that may act
elsewhere before it (a mail, a call the analysis cannot follow) is work every replica does first."""
from __future__ import annotations

import pytest

from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

LOCKING = """\
    import zlib
    from contextlib import contextmanager

    from django.db import connection, transaction


    @contextmanager
    def exclusive(name):
        with transaction.atomic():
            with connection.cursor() as cur:
                cur.execute("SELECT pg_try_advisory_xact_lock(%s)", [zlib.crc32(name.encode())])
                (got,) = cur.fetchone()
            yield bool(got)
"""

JOBS = """\
    from apscheduler.schedulers.background import BackgroundScheduler
    from django.core.mail import mail_admins
    from django.db import close_old_connections
    from vendor_sdk import ping

    from depot.locking import exclusive
    from depot.models import Shelf


    def _tidy():
        close_old_connections()


    def restock():
        {preamble}
        try:
            with exclusive("restock") as got:
                if not got:
                    return
                Shelf.objects.filter(empty=True).update(reorder=True)
        finally:
            close_old_connections()


    scheduler = BackgroundScheduler()
    scheduler.add_job(restock, "interval", minutes=10)
"""


@pytest.mark.parametrize("preamble, expected", [
    ("close_old_connections()", []),
    ("_tidy()", []),
    ("pass", []),
    ("mail_admins('restock', 'starting')", [(14, "OG201")]),
    ("ping()", [(14, "OG201")]),
])
def test_what_runs_before_the_claim(tmp_path, preamble, expected):
    write(tmp_path, {"pyproject.toml": "[project]\nname = 'depot'\n", "depot/__init__.py": "",
                     "depot/models.py": "from django.db import models\n\n\nclass Shelf(models.Model):\n"
                                        "    empty = models.BooleanField()\n    reorder = models.BooleanField()\n",
                     "depot/locking.py": LOCKING, "depot/jobs.py": JOBS.format(preamble=preamble)})
    assert findings(tmp_path, "depot/jobs.py", codes=("OG201",)) == expected
