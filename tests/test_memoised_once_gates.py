"""``@lru_cache`` on a function that acts outside the process and hands nothing back is a gate that lets it act
once per arguments and process (OG607): every replica, worker and restart acts again.  A memoised function
that hands back what it fetched is a memo, one that only works in memory is no gate of an effect, and one that
sets up this process (an SDK initialised, a package installed in its container) is every process's own work."""
from __future__ import annotations

import pytest

from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

NOTICES = """
    import functools
    import smtplib
    from email.message import EmailMessage

    import httpx


    @functools.lru_cache(maxsize=4096)
    def warn_owner(account: str, month: str) -> None:
        note = EmailMessage()
        note["To"] = f"owner+{account}@example.com"
        note.set_content(f"Your plan is used up for {month}.")
        with smtplib.SMTP("mail") as smtp:
            smtp.send_message(note)


    @functools.lru_cache
    def plan_of(account: str) -> dict:
        return httpx.get(f"https://plans.example/{account}").json()


    @functools.lru_cache
    def remember(account: str) -> None:
        print(account)


    @functools.lru_cache(maxsize=1)
    def start_tracing(dsn: str) -> None:
        import subprocess
        import sys

        subprocess.check_call([sys.executable, "-m", "pip", "install", "tracing-sdk"])
        import tracing_sdk

        tracing_sdk.init(dsn=dsn)
    """

ROUTES = """
    from fastapi import BackgroundTasks, FastAPI

    from .notices import plan_of, remember, start_tracing, warn_owner

    app = FastAPI()


    @app.post("/usage/{{account}}")
    def usage(account: str, background: BackgroundTasks):
        start_tracing("https://tracing.example")
        remember(account)
        if plan_of(account)["used_up"]:
            {hand}
        return {{"ok": True}}
    """

DIRECT = 'warn_owner(account, "2026-12")'
BACKGROUND = 'background.add_task(warn_owner, account, "2026-12")'


@pytest.mark.parametrize("hand", [DIRECT, BACKGROUND])
def test_a_memoised_function_that_sends_mail(tmp_path, hand):
    write(tmp_path, {"plans/__init__.py": "", "plans/notices.py": NOTICES,
                     "plans/routes.py": ROUTES.format(hand=hand)})
    assert findings(tmp_path, "plans/notices.py", codes=("OG607",)) == [(10, "OG607")]
