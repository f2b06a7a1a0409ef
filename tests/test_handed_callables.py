"""A call of a parameter that every caller hands a logger's method (``def throttled(emit, text): emit(text)``
called with ``log.warning``) is a log line: a marker that lets it through once per period per process gates
only this process's own output (OG608 leaves it alone); handed a function that sends mail, it gates work that
leaves the process."""
from __future__ import annotations

import pytest

from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

THROTTLE = """\
    import time

    _last_said = {}
    QUIET_SECONDS = 300


    def now_and_then(emit, text, key=None):
        key = key or text
        now = time.time()
        if key not in _last_said or now - _last_said[key] >= QUIET_SECONDS:
            emit(text)
            _last_said[key] = now
"""

VIEWS = """\
    import logging

    from django.http import JsonResponse

    from desk.alerts import page_on_call
    from desk.throttle import now_and_then

    log = logging.getLogger(__name__)


    def queue_depth(request):
        depth = int(request.GET.get("depth", 0))
        if depth > 1000:
            now_and_then({handed}, f"queue depth {{depth}}", "depth")
        return JsonResponse({{"depth": depth}})
"""

ALERTS = """\
    import smtplib


    def page_on_call(text):
        with smtplib.SMTP("mail") as server:
            server.sendmail("desk@x", ["oncall@x"], text)
"""


@pytest.mark.parametrize("handed, expected", [("log.warning", []), ("page_on_call", [(3, "OG608")])])
def test_a_marker_gating_what_its_callers_hand_it(tmp_path, handed, expected):
    write(tmp_path, {"pyproject.toml": "[project]\nname = 'desk'\n", "desk/__init__.py": "",
                     "desk/throttle.py": THROTTLE, "desk/views.py": VIEWS.format(handed=handed),
                     "desk/alerts.py": ALERTS})
    assert findings(tmp_path, "desk/throttle.py", codes=("OG608",)) == expected
