"""A window of attempts kept in a class's body is one per process, however many instances are made: a class
that prunes and stamps it against a clock, asked by a handler that refuses with 429 on the answer, counts in
this process alone (OG604).  The same window on each instance, made per request, is no state of the process."""
from __future__ import annotations

import pytest

from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

GATE = """
    import time
    from collections import defaultdict, deque


    class SignInGate:
        {state}

        def __init__(self, most: int, seconds: int):
            {instance_state}
            self.most = most
            self.seconds = seconds

        def _window(self, who: str, now: float):
            recent = self.attempts[who]
            while recent and recent[0] < now - self.seconds:
                recent.popleft()
            return recent

        def shut(self, who: str) -> bool:
            return len(self._window(who, time.monotonic())) >= self.most

        def failed(self, who: str) -> None:
            now = time.monotonic()
            self._window(who, now).append(now)
    """

API = """
    from fastapi import Depends, FastAPI, HTTPException

    from .gate import SignInGate

    app = FastAPI()


    def gate() -> SignInGate:
        return SignInGate(5, 900)


    @app.post("/sign-in")
    def sign_in(email: str, gate: SignInGate = Depends(gate)):
        if gate.shut(email):
            raise HTTPException(status_code=429, detail="try later")
        gate.failed(email)
        return {"ok": False}
    """

CLASS_LEVEL = ("attempts = defaultdict(deque)", "pass")
PER_INSTANCE = ("pass", "self.attempts = defaultdict(deque)")


@pytest.mark.parametrize("where, expected", [(CLASS_LEVEL, [(7, "OG604")]), (PER_INSTANCE, [])])
def test_a_window_kept_in_the_class_body(tmp_path, where, expected):
    state, instance_state = where
    write(tmp_path, {"auth/__init__.py": "", "auth/gate.py": GATE.format(state=state, instance_state=instance_state),
                     "auth/api.py": API})
    assert findings(tmp_path, "auth/gate.py", codes=("OG604",)) == expected
