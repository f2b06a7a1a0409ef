"""A Django cache alias (``caches["quota"]``) read off the project's ``CACHES``: a count kept with ``incr`` in an
alias whose backend is local memory is each process's own (OG607), whatever the default cache is; in an alias
on a shared backend it is every replica's.  The alias may be bound to a local first."""
from __future__ import annotations

import pytest

from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

SETTINGS = """
    CACHES = {{
        "default": {{"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": "redis://cache:6379"}},
        "meter": {{"BACKEND": "{backend}", "LOCATION": "meter"}},
    }}
    ROOT_URLCONF = "site.urls"
    INSTALLED_APPS = ["meter"]
    """

METER = """
    from django.core.cache import caches
    from django.http import JsonResponse


    def count_call(request):
        {body}
        if used > 1000:
            return JsonResponse({{"error": "over"}}, status=429)
        return JsonResponse({{"used": used}})
    """

BOUND = """tally = caches["meter"]
        tally.add(request.headers["X-Key"], 0)
        used = tally.incr(request.headers["X-Key"])"""
DIRECT = """caches["meter"].add(request.headers["X-Key"], 0)
        used = caches["meter"].incr(request.headers["X-Key"])"""
LOCAL = "django.core.cache.backends.locmem.LocMemCache"
SHARED = "django.core.cache.backends.redis.RedisCache"


@pytest.mark.parametrize("body, line", [(BOUND, 9), (DIRECT, 8)])
@pytest.mark.parametrize("backend, flagged", [(LOCAL, True), (SHARED, False)])
def test_a_count_in_a_cache_alias(tmp_path, body, line, backend, flagged):
    write(tmp_path, {"site/__init__.py": "", "site/settings.py": SETTINGS.format(backend=backend),
                     "meter/__init__.py": "", "meter/views.py": METER.format(body=body)})
    assert findings(tmp_path, "meter/views.py", codes=("OG607",)) == ([(line, "OG607")] if flagged else [])
