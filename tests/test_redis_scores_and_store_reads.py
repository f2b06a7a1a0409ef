"""OG301 on two Redis round trips: a sorted set member's score read with ZSCORE, added to in Python and written
with ZADD (ZINCRBY is the one-command change); and a document read through a project function or method named
``get`` (a Redis client's command name, but the project's own def) and set back whole after a change in Python."""
from __future__ import annotations

import pytest

from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

APP = """
    from flask import Flask

    from .ranking import credit

    app = Flask(__name__)


    @app.post("/crews/<crew>/wins")
    def win(crew):
        return {{"total": credit(crew, {amount})}}
    """

RANKING = """
    import redis

    standings = redis.Redis.from_url("redis://cache:6379/2")


    def credit(crew: str, earned: int) -> float:
        {body}
    """

READ_AND_ADD = """before = standings.zscore("crews", crew) or 0
        after = before + earned
        standings.zadd("crews", {crew: after})
        return after"""


def _ranking(tmp_path, body: str, app_amount: str = "5"):
    write(tmp_path, {"league/__init__.py": "", "league/app.py": APP.format(amount=app_amount),
                     "league/ranking.py": RANKING.format(body=body)})
    return findings(tmp_path, "league/ranking.py", codes=("OG301",))


def test_a_score_read_added_to_and_written_with_zadd(tmp_path):
    assert _ranking(tmp_path, READ_AND_ADD) == [(10, "OG301")]


@pytest.mark.parametrize("body", [
    'return standings.zincrby("crews", earned, crew)',
    READ_AND_ADD.replace('{crew: after})', '{crew: earned}, incr=True)'),
    # a score set from what the caller says, not from the read
    'before = standings.zscore("crews", crew)\n        standings.zadd("crews", {crew: earned})\n        return before',
])
def test_an_atomic_or_unrelated_score_write_is_clean(tmp_path, body):
    assert _ranking(tmp_path, body) == []


def test_a_score_read_in_an_async_client_behind_an_accessor(tmp_path):
    write(tmp_path, {
        "ladder/__init__.py": "",
        "ladder/conn.py": """
            from redis import asyncio as aioredis

            _pool = None


            async def connect(url: str) -> None:
                global _pool
                _pool = aioredis.from_url(url)


            def pool():
                return _pool
            """,
        "ladder/points.py": """
            from . import conn


            async def grant(player: str, amount: int) -> float:
                client = conn.pool()
                now = await client.zscore("season", player)
                await client.zadd("season", {player: (now or 0) + amount})
                return amount
            """,
        "ladder/app.py": """
            from quart import Quart

            from . import conn, points

            app = Quart(__name__)


            @app.before_serving
            async def start():
                await conn.connect("redis://cache")


            @app.post("/players/<player>/points")
            async def add(player):
                return {"granted": await points.grant(player, 10)}
            """,
    })
    assert findings(tmp_path, "ladder/points.py", codes=("OG301",)) == [(8, "OG301")]


STORE = """
    import json

    import redis


    class BasketStore:
        def __init__(self, client: redis.Redis) -> None:
            self._client = client

        def get(self, basket: str) -> dict:
            raw = self._client.get(f"basket:{basket}")
            return json.loads(raw) if raw else {"lines": {}}

        def put_line(self, basket: str, sku: str, qty: int) -> dict:
            doc = self.get(basket)
            doc["lines"][sku] = qty
            self._client.set(f"basket:{basket}", json.dumps(doc), ex=3600)
            return doc

        def empty(self, basket: str) -> dict:
            doc = self.get(basket)
            self._client.set(f"basket:{basket}", json.dumps({"lines": {}}), ex=3600)
            return doc
    """


def test_a_document_read_through_the_stores_own_get_and_set_back(tmp_path):
    write(tmp_path, {"baskets/__init__.py": "", "baskets/store.py": STORE})
    assert findings(tmp_path, "baskets/store.py", codes=("OG301",)) == [(18, "OG301")]


def test_an_async_store_whose_get_reads_through_a_key_helper(tmp_path):
    write(tmp_path, {
        "visits/__init__.py": "",
        "visits/keys.py": """
            def session_key(sid: str) -> str:
                return "sess:" + sid
            """,
        "visits/sessions.py": """
            import json
            from datetime import datetime

            from redis.asyncio import Redis

            from .keys import session_key


            class Sessions:
                def __init__(self, url: str) -> None:
                    self._redis = Redis.from_url(url)

                async def get(self, sid: str) -> dict:
                    raw = await self._redis.get(session_key(sid))
                    return json.loads(raw or "{}")

                async def touch(self, sid: str, page: str) -> None:
                    data = await self.get(sid)
                    data.setdefault("pages", []).append(page)
                    data["seen"] = datetime.utcnow().isoformat()
                    await self._redis.set(session_key(sid), json.dumps(data))
            """,
    })
    assert findings(tmp_path, "visits/sessions.py", codes=("OG301",)) == [(22, "OG301")]
