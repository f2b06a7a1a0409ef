"""OG602: a RabbitMQ queue each replica declares for itself and binds to an exchange.

``await channel.declare_queue(exclusive=True)`` (or a server-named queue) bound to a fanout exchange: every
replica holds its own queue and gets a copy of every message, so the per-message work (an audit row written)
runs once per replica.  A named queue the replicas share is a work queue: each message reaches one of them.
"""
from __future__ import annotations

import pytest
from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

AIO_PIKA = """\
    import asyncio
    from contextlib import asynccontextmanager

    import aio_pika
    import asyncpg
    from fastapi import FastAPI


    async def consume(connection, pool):
        channel = await connection.channel()
        exchange = await channel.declare_exchange("events", aio_pika.ExchangeType.FANOUT, durable=True)
        queue = await channel.declare_queue({declared})
        await queue.bind(exchange)
        async with queue.iterator() as messages:
            async for message in messages:
                async with message.process():
                    await pool.execute("INSERT INTO audit (body) VALUES ($1)", message.body.decode())


    @asynccontextmanager
    async def lifespan(app):
        connection = await aio_pika.connect_robust("amqp://rabbit/")
        pool = await asyncpg.create_pool("postgresql://app@db/app")
        task = asyncio.create_task(consume(connection, pool))
        yield
        task.cancel()


    app = FastAPI(lifespan=lifespan)
"""


@pytest.mark.parametrize("declared, expected", [
    ("exclusive=True", [(15, "OG602")]),
    ("", [(15, "OG602")]),  # (server-named: this connection's own)
    ('"audit-writer", durable=True', []),  # (one queue the replicas share: each message reaches one of them)
])
def test_an_aio_pika_queue_of_its_own(tmp_path, declared, expected):
    write(tmp_path, {"audit/__init__.py": "", "audit/main.py": AIO_PIKA.replace("{declared}", declared)})
    assert findings(tmp_path, "audit/main.py", codes=("OG602",)) == expected


PIKA = """\
    import pika
    import psycopg


    class Consumer:
        def __init__(self) -> None:
            self.db = psycopg.connect("postgresql://app@db/app")

        def run(self) -> None:
            channel = pika.BlockingConnection(pika.URLParameters("amqp://rabbit/")).channel()
            channel.exchange_declare(exchange="accounts", exchange_type="fanout")
            result = channel.queue_declare(queue="", exclusive=True)
            queue_name = result.method.queue
            channel.queue_bind(exchange="accounts", queue=queue_name)
            channel.basic_consume(queue=queue_name, on_message_callback=self._on_message)
            channel.start_consuming()

        def _on_message(self, channel, method, properties, body) -> None:
            self.db.execute("INSERT INTO audit (body) VALUES (%s)", (body.decode(),))
            channel.basic_ack(delivery_tag=method.delivery_tag)


    Consumer().run()
"""


def test_a_pika_callback_on_a_server_named_exclusive_queue(tmp_path):
    write(tmp_path, {"auditor/__init__.py": "", "auditor/consumer.py": PIKA,
                     "Dockerfile": "FROM python:3.11\nCOPY . /app\nCMD [\"python\", \"-m\", \"auditor.consumer\"]\n"})
    assert findings(tmp_path, "auditor/consumer.py", codes=("OG602",)) == [(15, "OG602")]
