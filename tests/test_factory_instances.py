"""OG201: a ticker whose loop is a method of an object a factory of the project builds.

``poller = make_poller()`` then ``Thread(target=poller.loop_forever)`` at start-up, where ``make_poller`` returns
``InboxPoller(...)`` (annotated or not): the thread runs ``InboxPoller.loop_forever`` in every replica.
"""
from __future__ import annotations

import pytest
from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

POLLER = """\
    import imaplib
    import time


    class InboxPoller:
        def __init__(self, host):
            self.host = host

        def poll(self):
            with imaplib.IMAP4_SSL(self.host) as box:
                box.select("INBOX")
                box.uid("store", "1", "+FLAGS", "(\\\\Seen)")

        def loop_forever(self, pause):
            while True:
                self.poll()
                time.sleep(pause)


    def make_poller(){returns}:
        return InboxPoller("imap.example.com")
"""

STARTUP = """\
    import threading

    from flask import Flask

    from .poller import make_poller


    def create_app():
        app = Flask(__name__)
        poller = make_poller()
        threading.Thread(target=poller.loop_forever, args=(60,), daemon=True).start()
        return app
"""


@pytest.mark.parametrize("returns", ["", " -> InboxPoller"])
def test_a_thread_running_a_method_of_what_a_factory_builds(tmp_path, returns):
    write(tmp_path, {"desk/__init__.py": "", "desk/poller.py": POLLER.replace("{returns}", returns),
                     "desk/app.py": STARTUP,
                     "Procfile": "web: gunicorn 'desk.app:create_app()' --workers 3\n"})
    assert findings(tmp_path, "desk/app.py") == [(11, "OG201")]
