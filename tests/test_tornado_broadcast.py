"""OG605: Tornado WebSocket handlers kept in this process's registry and written to from another request.

Each ``WebSocketHandler.open`` joins the module-level board; a clerk's POST announces a bid with
``write_message`` to every handler in the set: the screens connected to the other replicas never get it.
"""
from __future__ import annotations

from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

HUB = """\
    import json

    from tornado.websocket import WebSocketHandler


    class Board:
        def __init__(self) -> None:
            self._screens: set[WebSocketHandler] = set()

        def join(self, screen: WebSocketHandler) -> None:
            self._screens.add(screen)

        def announce(self, event: dict) -> None:
            for screen in list(self._screens):
                screen.write_message(json.dumps(event))


    board = Board()


    class ScreenSocket(WebSocketHandler):
        def open(self) -> None:
            board.join(self)

        def on_message(self, message) -> None:
            self.write_message(message)
"""


def test_writing_to_every_handler_of_the_process_registry_is_reported(tmp_path):
    write(tmp_path, {"ring/__init__.py": "", "ring/hub.py": HUB})
    assert findings(tmp_path, "ring/hub.py", codes=("OG605",)) == [(14, "OG605")]


def test_answering_the_connection_being_served_is_not_a_broadcast(tmp_path):
    served = HUB.replace("""        def announce(self, event: dict) -> None:
            for screen in list(self._screens):
                screen.write_message(json.dumps(event))
""", """        def size(self) -> int:
            return len(self._screens)
""")
    write(tmp_path, {"ring/__init__.py": "", "ring/hub.py": served})
    assert findings(tmp_path, "ring/hub.py", codes=("OG605",)) == []
