"""OG604 on two hand-written limiters: a quota counted in a module-level dict keyed by a period a small helper
reads off the clock (``_month()`` returning ``datetime.now().strftime("%Y%m")``), refused by a caller in another
module; and a limiter object a start-up function makes into a local that the request hook it defines refuses on
(the closure keeps the one object for the process's life)."""
from __future__ import annotations

import pytest

from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

METER = """
    \"\"\"Billable calls per key and period, against the plan quota.\"\"\"
    {imports}

    _seen: dict[str, int] = {{}}


    def {period}() -> str:
        return {clock}


    def count(token: str) -> int:
        slot = token + ":" + {period}()
        _seen[slot] = _seen.get(slot, 0) + 1
        return _seen[slot]
    """

VIEWS = """
    from flask import Flask, jsonify, request

    from . import meter

    app = Flask(__name__)
    QUOTA = 5000


    @app.get("/v2/lookup")
    def lookup():
        spent = meter.count(request.headers.get("X-Token", ""))
        if spent > QUOTA:
            return jsonify({"error": "quota used up"}), 429
        return jsonify({"spent": spent})
    """


@pytest.mark.parametrize("imports, period, clock", [
    ("import datetime", "_month", 'datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m")'),
    ("from datetime import datetime", "_this_month", 'datetime.utcnow().strftime("%Y-%m")'),
    ("import time", "_hour", "str(int(time.time() // 3600))"),
])
def test_a_quota_counted_per_period_a_helper_reads_off_the_clock(tmp_path, imports, period, clock):
    write(tmp_path, {"metering/__init__.py": "", "metering/views.py": VIEWS,
                     "metering/meter.py": METER.format(imports=imports, period=period, clock=clock)})
    assert findings(tmp_path, "metering/meter.py", codes=("OG604",)) == [(5, "OG604")]


def test_a_quota_counted_in_redis_is_clean(tmp_path):
    write(tmp_path, {"metering/__init__.py": "", "metering/views.py": VIEWS, "metering/meter.py": """
        import datetime

        import redis

        _store = redis.Redis()


        def _month() -> str:
            return datetime.datetime.now().strftime("%Y%m")


        def count(token: str) -> int:
            return _store.incr(token + ":" + _month())
        """})
    assert findings(tmp_path, "metering/meter.py", codes=("OG604",)) == []


WINDOW = """
    import time
    from collections import defaultdict


    class Budget:
        def __init__(self, per_minute: int) -> None:
            self.per_minute = per_minute
            self._stamps: dict[str, list[float]] = defaultdict(list)

        def spend(self, who: str) -> bool:
            now = time.monotonic()
            recent = [t for t in self._stamps[who] if t > now - 60]
            self._stamps[who] = recent
            if len(recent) >= self.per_minute:
                return False
            recent.append(now)
            return True
    """

HOOKS = """
    from flask import jsonify, request

    from .window import Budget


    def guard(app) -> None:
        budget = Budget(30)

        @app.before_request
        def check_budget():
            if not budget.spend(request.remote_addr or "?"):
                return jsonify({"error": "slow down"}), 429
            return None
    """


def test_a_limiter_kept_by_the_request_hook_a_start_up_function_defines(tmp_path):
    write(tmp_path, {
        "relay/__init__.py": "",
        "relay/window.py": WINDOW,
        "relay/hooks.py": HOOKS,
        "relay/app.py": """
            from flask import Flask

            from .hooks import guard


            def create_app() -> Flask:
                app = Flask(__name__)
                guard(app)
                return app


            app = create_app()
            """,
    })
    assert findings(tmp_path, "relay/window.py", codes=("OG604",)) == [(9, "OG604")]


def test_a_limiter_made_afresh_in_a_handler_is_no_start_up_state(tmp_path):
    write(tmp_path, {
        "relay/__init__.py": "",
        "relay/window.py": WINDOW,
        "relay/app.py": """
            from flask import Flask, jsonify

            from .window import Budget

            app = Flask(__name__)


            @app.post("/send")
            def send():
                budget = Budget(30)

                def ask(who):
                    if not budget.spend(who):
                        return jsonify({"error": "slow down"}), 429
                    return None

                return ask("me") or jsonify({"ok": True})
            """,
    })
    assert findings(tmp_path, "relay/window.py", codes=("OG604",)) == []
