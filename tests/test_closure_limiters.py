"""OG604: a hand-written limiter whose answer is a tuple led by the yes-or-no (``return False, wait``), asked by
a request hook nested in an installer that is handed the limiter (a typed parameter its closure reads), and
refused by setting the response's status (``response.status_code = 429``)."""
from __future__ import annotations

import pytest

from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

BUCKETS = """\
    import time

    _levels: dict = {}


    class Leaky:
        def __init__(self, per_second: float, burst: int) -> None:
            self.per_second = per_second
            self.burst = burst

        def take(self, who: str):
            now = time.monotonic()
            level, seen = _levels.get(who, (0.0, now))
            level = max(0.0, level - (now - seen) * self.per_second)
            if level + 1 > self.burst:
                _levels[who] = (level, now)
                return False, (level + 1 - self.burst) / self.per_second
            _levels[who] = (level + 1, now)
            return True, 0.0
"""

HOOK = """\
    from flask import Flask, jsonify, request

    from maps.buckets import Leaky


    def guard(app: Flask, bucket: Leaky) -> None:
        @app.before_request
        def _check():
            ok, wait = bucket.take(request.remote_addr or "?")
            if ok:
                return None
            answer = jsonify(error="slow down", wait=wait)
            answer.status_code = {status}
            return answer
"""

APP = """\
    from flask import Flask

    from maps.buckets import Leaky
    from maps.hooks import guard


    def create_app() -> Flask:
        app = Flask(__name__)
        guard(app, Leaky(per_second=2.0, burst=10))
        return app
"""


@pytest.mark.parametrize("status, expected", [(429, [(3, "OG604")]), (403, [])])
def test_a_closure_hook_refusing_on_the_limiters_answer(tmp_path, status, expected):
    write(tmp_path, {"pyproject.toml": "[project]\nname = 'maps'\n", "maps/__init__.py": "",
                     "maps/buckets.py": BUCKETS, "maps/hooks.py": HOOK.format(status=status), "maps/app.py": APP})
    assert findings(tmp_path, "maps/buckets.py", codes=("OG604",)) == expected
