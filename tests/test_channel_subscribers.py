"""OG602: subscriptions every replica holds to a channel that gives each subscriber every message, handling each
message with work that leaves the process.

A Redis pub/sub listener started by the lifespan, a Redis Stream read with ``XREAD`` by a worker every replica
runs, an asyncpg ``add_listener`` callback, a Kafka consumer with a group of its own: each replica hears every
message and writes the row, calls the webhook, once per replica.  Beside each, what is not that: a relay to this
process's own sockets, a consumer group (``XREADGROUP``, one Kafka group id), a message claimed before the work.
"""
from __future__ import annotations

import pytest
from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

PUBSUB = """\
    import asyncio
    import json
    from contextlib import asynccontextmanager

    import httpx
    import redis.asyncio as redis
    from fastapi import FastAPI

    client = redis.Redis()
    _sockets: set = set()


    async def relay_payments() -> None:
        pubsub = client.pubsub()
        await pubsub.subscribe("payments")
        async for message in pubsub.listen():
            if message["type"] != "message":
                continue
            event = json.loads(message["data"])
            {work}


    @asynccontextmanager
    async def lifespan(app: FastAPI):
        task = asyncio.create_task(relay_payments())
        yield
        task.cancel()


    app = FastAPI(lifespan=lifespan)
"""


@pytest.mark.parametrize("work, expected", [
    ('await httpx.AsyncClient().post("https://merchant.example.org/hook", json=event)', [(16, "OG602")]),
    ("for socket in list(_sockets):\n                await socket.send_json(event)", []),
    ('if not await client.set(f"seen:{event[\'id\']}", 1, nx=True, ex=3600):\n                continue\n'
     '            await httpx.AsyncClient().post("https://merchant.example.org/hook", json=event)', []),
])
def test_a_pubsub_listener_started_by_the_lifespan(tmp_path, work, expected):
    write(tmp_path, {"relay/__init__.py": "", "relay/main.py": PUBSUB.replace("{work}", work)})
    assert findings(tmp_path, "relay/main.py", codes=("OG602",)) == expected


STREAM_WORKER = """\
    import time

    import redis
    import stripe

    r = redis.Redis()


    def main() -> None:
        last = "$"
        while True:
            {read}
            for _stream, entries in batch or []:
                for entry_id, fields in entries:
                    stripe.Charge.create(amount=int(fields[b"amount"]), currency="eur")
                    last = entry_id
            time.sleep(0.1)


    if __name__ == "__main__":
        main()
"""

COMPOSE = "services:\n  worker:\n    build: .\n    command: python -m billing.worker\n    deploy:\n      replicas: 3\n"


@pytest.mark.parametrize("read, expected", [
    ('batch = r.xread({"renewals": last}, block=5000)', [(11, "OG602")]),
    ('batch = r.xreadgroup("billing", "worker", {"renewals": ">"}, block=5000)', []),
])
def test_a_stream_read_without_a_group_by_every_replica(tmp_path, read, expected):
    write(tmp_path, {"billing/__init__.py": "", "billing/worker.py": STREAM_WORKER.replace("{read}", read),
                     "docker-compose.yml": COMPOSE})
    assert findings(tmp_path, "billing/worker.py", codes=("OG602",)) == expected


KAFKA = """\
    import asyncio
    import json
    import socket
    from contextlib import asynccontextmanager

    import httpx
    from aiokafka import AIOKafkaConsumer
    from fastapi import FastAPI


    async def consume() -> None:
        consumer = AIOKafkaConsumer("orders", bootstrap_servers="kafka:9092", group_id={group})
        await consumer.start()
        try:
            async for message in consumer:
                order = json.loads(message.value)
                await httpx.AsyncClient().post("https://mail.example.org/send", json={"to": order["email"]})
        finally:
            await consumer.stop()


    @asynccontextmanager
    async def lifespan(app: FastAPI):
        task = asyncio.create_task(consume())
        yield
        task.cancel()


    app = FastAPI(lifespan=lifespan)
"""


@pytest.mark.parametrize("group, expected", [
    ('f"mailer-{socket.gethostname()}"', [(15, "OG602")]),
    ("None", [(15, "OG602")]),
    ('"mailer"', []),
])
def test_a_kafka_consumer_with_a_group_of_its_own(tmp_path, group, expected):
    write(tmp_path, {"mailer/__init__.py": "", "mailer/main.py": KAFKA.replace("{group}", group)})
    assert findings(tmp_path, "mailer/main.py", codes=("OG602",)) == expected


NATS_HANDLERS = """\
    import psycopg


    def build_handler(dsn: str):
        async def handle(msg) -> None:
            async with await psycopg.AsyncConnection.connect(dsn) as conn:
                await conn.execute("INSERT INTO invoices (order_id) VALUES (%s)", (msg.data.decode(),))

        return handle
"""

NATS_MAIN = """\
    from contextlib import asynccontextmanager

    import nats
    from fastapi import FastAPI

    from billing.handlers import build_handler


    @asynccontextmanager
    async def lifespan(app: FastAPI):
        nc = await nats.connect("nats://nats:4222")
        handle = build_handler("postgresql://billing@db/billing")
        await nc.subscribe("orders.created", cb=handle{queue})
        yield
        await nc.drain()


    app = FastAPI(lifespan=lifespan)
"""


@pytest.mark.parametrize("queue, expected", [("", [(13, "OG602")]), (', queue="invoicer"', [])])
def test_a_nats_subscription_whose_handler_a_factory_of_another_module_makes(tmp_path, queue, expected):
    write(tmp_path, {"billing/__init__.py": "", "billing/handlers.py": NATS_HANDLERS,
                     "billing/main.py": NATS_MAIN.replace("{queue}", queue)})
    assert findings(tmp_path, "billing/main.py", codes=("OG602",)) == expected
