"""OG301 on a cache: a value read, changed in Python and written back whole loses another writer's change; a
value computed afresh after a miss and stored is a cache fill, and writes back nothing anyone read.

``stats = cache.get(k); if stats is None: stats = []; stats.append(...); cache.set(k, stats)`` stores what this
pass computed.  With the write outside the miss branch (``if data is None: data = {}`` then ``data[x] = 1`` and
``cache.set(k, data)`` for every pass), the entry read is changed and written back: still reported.
"""
from __future__ import annotations

import pytest
from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

SETTINGS = """\
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache",
                          "LOCATION": "redis://cache:6379/0"}}
"""

FILL = """\
    import datetime

    from django.core.cache import cache
    from django.utils import timezone

    from .models import Post


    def weekly_counts(request) -> list:
        stats = cache.get("weekly-counts")
        if stats is None:
            stats = []
            now = timezone.now()
            week_start = now - datetime.timedelta(now.weekday())
            for _ in range(8):
                week_end = week_start + datetime.timedelta(days=7)
                stats.append({"week": int(week_start.timestamp()),
                              "posts": Post.objects.filter(created__gte=week_start, created__lt=week_end).count()})
                week_start -= datetime.timedelta(days=7)
            cache.set("weekly-counts", stats, timeout=300)
        return stats
"""

CHANGED = """\
    from django.core.cache import cache


    def count_visit(page):
        visits = cache.get("visits")
        if visits is None:
            visits = {}
        visits[page] = visits.get(page, 0) + 1
        cache.set("visits", visits, timeout=None)
"""


@pytest.mark.parametrize("source, reported", [(FILL, []), (CHANGED, [(9, "OG301")])])
def test_a_fill_after_a_miss_and_a_value_changed_in_place(tmp_path, source, reported):
    write(tmp_path, {"site/__init__.py": "", "site/settings.py": SETTINGS,
                     "site/models.py": "from django.db import models\n\n\nclass Post(models.Model):\n"
                                       "    created = models.DateTimeField()\n",
                     "site/stats.py": source})
    assert findings(tmp_path, "site/stats.py", codes=("OG301",)) == reported


DERIVED = """\
    from django.core.cache import cache


    def count_visit(page):
        stored = cache.get("visits")
        visits = stored or {}
        visits[page] = visits.get(page, 0) + 1
        cache.set("visits", visits, timeout=None)
"""


def test_a_name_rebound_to_what_was_read_is_no_fresh_object(tmp_path):
    write(tmp_path, {"site/__init__.py": "", "site/settings.py": SETTINGS, "site/threads.py": DERIVED})
    assert [code for _, code in findings(tmp_path, "site/threads.py", codes=("OG301",))] == ["OG301"]
