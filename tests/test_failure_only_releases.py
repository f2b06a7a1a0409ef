"""OG502: a once-marker given back only when the work it claimed fails.

A delivery claimed with ``cache.add(key, "1", timeout=window)`` (or ``SET NX EX``) and kept when the work
succeeds is a record that the delivery was handled: its expiry is how long that is remembered.  Deleting it in
the ``except`` of that one attempt frees it for a retry long before it could have expired, so it cannot drop
another replica's claim.  A delete on the success path, or in ``finally``, gives the key back after work that
may have outlived it: that one still needs the holder's token.
"""
from __future__ import annotations

import pytest
from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

SETTINGS = """\
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache",
                          "LOCATION": "redis://cache:6379/0"}}
"""

MARKER = """\
    from django.core.cache import cache


    def deliver_once(delivery_id, handle):
        marker = f"hooks:seen:{delivery_id}"
        if not cache.add(marker, "1", timeout=86_400):
            return False
        {body}
        return True
"""

FAILURE_ONLY = """try:
            handle()
        except Exception:
            cache.delete(marker)
            raise"""

IN_FINALLY = """try:
            handle()
        finally:
            cache.delete(marker)"""

BOTH_PATHS = """try:
            handle()
        except Exception:
            cache.delete(marker)
            raise
        cache.delete(marker)"""


@pytest.mark.parametrize("body, reported", [
    (FAILURE_ONLY, []),
    (IN_FINALLY, [(11, "OG502")]),
    (BOTH_PATHS, [(11, "OG502")]),
])
def test_a_marker_deleted_only_when_its_work_fails(tmp_path, body, reported):
    write(tmp_path, {"hooks/__init__.py": "", "hooks/settings.py": SETTINGS,
                     "hooks/dedupe.py": MARKER.replace("{body}", body)})
    assert findings(tmp_path, "hooks/dedupe.py", codes=("OG502",)) == reported


REDIS_MARKER = """\
    import redis

    client = redis.Redis(host="redis")


    def run_once(job_id, work):
        key = f"jobs:once:{job_id}"
        if not client.set(key, "1", nx=True, ex={ttl}):
            return
        try:
            work()
        except Exception:
            client.delete(key)
            raise
"""


@pytest.mark.parametrize("ttl", ["3600", "30"])
def test_the_same_with_a_redis_client_whatever_the_expiry(tmp_path, ttl):
    write(tmp_path, {"jobs/__init__.py": "", "jobs/once.py": REDIS_MARKER.replace("{ttl}", ttl)})
    assert findings(tmp_path, "jobs/once.py", codes=("OG502",)) == []


def test_a_lock_released_after_its_work_is_still_reported(tmp_path):
    source = REDIS_MARKER.replace("{ttl}", "30").replace("""        except Exception:
            client.delete(key)
            raise
""", """        finally:
            client.delete(key)
""")
    write(tmp_path, {"jobs/__init__.py": "", "jobs/once.py": source})
    assert findings(tmp_path, "jobs/once.py", codes=("OG502",)) == [(13, "OG502")]


TAKEN_BACK = """\
    from django.core.cache import cache


    def redeem(code_id, entry, finish):
        claim = f"codes:{code_id}:claimed"
        if not cache.add(claim, "1", timeout=300):
            raise ValueError("already used")
        if entry is None:
            {between}
            cache.delete(claim)
            raise LookupError(code_id)
        finish(entry)
"""


@pytest.mark.parametrize("between, reported", [
    ("pass", []),
    ("finish(None)", [(10, "OG502")]),
])
def test_a_claim_taken_back_before_any_work(tmp_path, between, reported):
    # Given back before anything runs while it is held, the claim cannot have expired into another
    # replica's hands; work in between (anything called) may outlive it.
    write(tmp_path, {"codes/__init__.py": "", "codes/settings.py": SETTINGS,
                     "codes/redeem.py": TAKEN_BACK.replace("{between}", between)})
    assert findings(tmp_path, "codes/redeem.py", codes=("OG502",)) == reported
