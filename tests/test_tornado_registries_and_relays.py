"""OG605: Tornado handlers are the connections they serve, and a relay handed its delivery function.

In a ``tornado.websocket.WebSocketHandler``'s methods ``self`` is the socket: ``ChatSocket.clients.add(self)`` makes
the class-level set a registry of this process's connections, and a ``RequestHandler`` that walks it reaches
only this replica's clients.  Handed as a callable to a project function that calls it only for the messages of a
pub/sub subscription every replica holds, the delivery is each replica telling its own clients: left alone.
"""
from __future__ import annotations

import pytest
from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

SOCKETS = """\
    import tornado.websocket


    class ChatSocket(tornado.websocket.WebSocketHandler):
        clients: set = set()

        def open(self) -> None:
            ChatSocket.clients.add(self)

        def on_close(self) -> None:
            ChatSocket.clients.discard(self)

        @classmethod
        def deliver(cls, payload: str) -> None:
            for client in list(cls.clients):
                client.write_message(payload)
"""

ANNOUNCE = """\
    import tornado.web

    from chat.sockets import ChatSocket


    class Announce(tornado.web.RequestHandler):
        def post(self) -> None:
            ChatSocket.deliver(self.request.body.decode())
"""

RELAY = """\
    from redis.asyncio import Redis

    from chat.sockets import ChatSocket

    redis = Redis()


    async def relay_forever(deliver) -> None:
        async with redis.pubsub() as pubsub:
            await pubsub.subscribe("chat")
            async for message in pubsub.listen():
                if message["type"] == "message":
                    deliver(message["data"].decode())


    async def main() -> None:
        await relay_forever(ChatSocket.deliver)
"""


@pytest.mark.parametrize("caller, expected", [("chat/announce.py", [(15, "OG605")]), ("chat/relay.py", [])])
def test_a_handler_class_registry_and_who_delivers(tmp_path, caller, expected):
    write(tmp_path, {"chat/__init__.py": "", "chat/sockets.py": SOCKETS,
                     caller: ANNOUNCE if caller.endswith("announce.py") else RELAY})
    assert findings(tmp_path, "chat/sockets.py", codes=("OG605",)) == expected
