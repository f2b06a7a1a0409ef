"""A hand-written limiter whose per-key container a module function makes (``global _hits`` … ``_hits = {}`` in
an ``init()``) rather than the module's top level: still one per process.  Stamped with a clock (also through a
helper of the module that hands back the key's window) and refused on with 429, it is reported at the stamp."""
from __future__ import annotations

from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

GUARD = """
    import time

    _hits = None
    _ceiling = 0


    def setup(ceiling):
        global _hits, _ceiling
        _hits = {}
        _ceiling = ceiling


    def _window(key, now):
        kept = [t for t in _hits.get(key, []) if now - t < 60]
        _hits[key] = kept
        return kept


    def over_limit(key):
        return len(_window(key, time.monotonic())) >= _ceiling


    def note_attempt(key):
        now = time.monotonic()
        _window(key, now).append(now)
    """

DIRECT = """
    import time

    _hits = None


    def setup():
        global _hits
        _hits = {}


    def over_limit(key):
        return len(_hits.get(key, [])) >= 5


    def note_attempt(key):
        _hits.setdefault(key, []).append(time.monotonic())
    """

VIEWS = """
    from flask import Flask, request

    from gate import guard

    app = Flask(__name__)
    guard.setup(5)


    @app.post("/pin")
    def check_pin():
        key = request.remote_addr
        if guard.over_limit(key):
            return {"error": "slow down"}, 429
        guard.note_attempt(key)
        return {"ok": True}
    """


def test_a_container_made_by_init_and_stamped_through_a_helper_is_flagged(tmp_path):
    write(tmp_path, {"gate/__init__.py": "", "gate/guard.py": GUARD, "gate/views.py": VIEWS})
    assert findings(tmp_path, "gate/guard.py", codes=("OG604",)) == [(26, "OG604")]


def test_a_container_made_by_init_and_stamped_directly_is_flagged(tmp_path):
    write(tmp_path, {"gate/__init__.py": "", "gate/guard.py": DIRECT, "gate/views.py": VIEWS})
    assert findings(tmp_path, "gate/guard.py", codes=("OG604",)) == [(17, "OG604")]


def test_a_caller_that_never_refuses_with_429_is_clean(tmp_path):
    views = VIEWS.replace('return {"error": "slow down"}, 429', 'print("noted")')
    write(tmp_path, {"gate/__init__.py": "", "gate/guard.py": GUARD, "gate/views.py": views})
    assert findings(tmp_path, "gate/guard.py", codes=("OG604",)) == []


def test_a_container_never_stamped_with_a_clock_is_clean(tmp_path):
    guard = DIRECT.replace("time.monotonic()", "key")
    write(tmp_path, {"gate/__init__.py": "", "gate/guard.py": guard, "gate/views.py": VIEWS})
    assert findings(tmp_path, "gate/guard.py", codes=("OG604",)) == []
