"""OG201: a project decorator that repeats what it decorates with a timer that arms itself again.

``@every(seconds=300)`` whose def makes ``threading.Timer(seconds, tick)``, ``tick`` calling the decorated function
and then arming the next timer: each decorated function is a ticker's job, reported there (with or without a
claim of its own), and the generic ``tick`` is not a job of its own.
"""
from __future__ import annotations

import pytest
from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

SCHEDULING = """\
    import threading


    def every(seconds):
        def decorator(fn):
            def tick():
                try:
                    fn()
                finally:
                    arm()

            def arm():
                timer = threading.Timer(seconds, tick)
                timer.daemon = True
                timer.start()

            arm()
            return fn

        return decorator
"""

DIGEST = """\
    import httpx
    from redis import Redis

    from pulse.scheduling import every

    redis = Redis()


    @every(seconds=300)
    def post_digest():
        {claim}
        httpx.post("https://hooks.example.org/digest", json={"open": 3})
"""


@pytest.mark.parametrize("claim, expected", [
    ("pass", [(10, "OG201")]),
    ('if not redis.set("digest", 1, nx=True, ex=290): return', []),
])
def test_a_decorated_function_is_the_timers_job(tmp_path, claim, expected):
    write(tmp_path, {"pulse/__init__.py": "", "pulse/scheduling.py": SCHEDULING,
                     "pulse/digest.py": DIGEST.replace("{claim}", claim)})
    assert findings(tmp_path, "pulse/digest.py", codes=("OG201",)) == expected
    assert findings(tmp_path, "pulse/scheduling.py", codes=("OG201",)) == []
