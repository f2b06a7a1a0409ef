"""OG602 event-consumer-per-replica: shapes beyond the rule doc, and the lookalikes it must leave alone."""
from __future__ import annotations

from onceguard.testing import findings_in_written_file, write_source as write


def og602(tmp_path, path: str, source: str, cross_file: bool = False):
    return findings_in_written_file(tmp_path, path, source, "OG602", cross_file)


SERVER = """
    import asyncio
    import os
    from contextlib import asynccontextmanager

    from fastapi import FastAPI


    @asynccontextmanager
    async def lifespan(app: FastAPI):
        task = None
        if token := os.environ.get("DISCORD_BOT_TOKEN"):
            from chatapp.discord_bot import client

            task = asyncio.create_task(client.start(token))
        yield
        if task:
            task.cancel()


    app = FastAPI(lifespan=lifespan)
"""


def test_client_imported_from_another_module_inside_the_lifespan(tmp_path):
    write(tmp_path, "chatapp/__init__.py", "")
    write(tmp_path, "chatapp/discord_bot.py", """
        import discord

        intents = discord.Intents.default()
        client = discord.Client(intents=intents)
    """)
    found = og602(tmp_path, "chatapp/server.py", SERVER, cross_file=True)
    assert [d.line for d in found] == [15]
    assert "lifespan" in found[0].message and "`chatapp.discord_bot.client`" in found[0].message
    assert found[0].suggestion[:1].isupper()
    # one file alone does not show what `client` is
    assert og602(tmp_path, "chatapp/server.py", SERVER, cross_file=False) == []


def test_an_imported_name_that_is_no_consumer_is_left_alone(tmp_path):
    write(tmp_path, "chatapp/__init__.py", "")
    write(tmp_path, "chatapp/discord_bot.py", """
        class Relay:
            async def start(self, token: str) -> None:
                ...

        client = Relay()
    """)
    assert og602(tmp_path, "chatapp/server.py", SERVER, cross_file=True) == []


def test_start_function_nobody_calls_at_startup_is_left_alone(tmp_path):
    assert og602(tmp_path, "bots/runner.py", """
        import os

        import discord

        client = discord.Client(intents=discord.Intents.default())


        def main() -> None:
            client.run(os.environ["DISCORD_TOKEN"])
    """) == []


def test_module_level_run_in_a_bot_module_is_its_own_process(tmp_path):
    assert og602(tmp_path, "bot.py", """
        import discord

        client = discord.Client(intents=discord.Intents.default())
        client.run("token")
    """) == []


def test_telegram_builder_chain_polled_from_a_startup_event(tmp_path):
    found = og602(tmp_path, "app/main.py", """
        from fastapi import FastAPI
        from telegram.ext import ApplicationBuilder

        app = FastAPI()


        @app.on_event("startup")
        async def start_bot() -> None:
            bot_app = ApplicationBuilder().token("t").build()
            await bot_app.updater.start_polling()
            bot_app.run_polling()
    """)
    # `bot_app.updater` is not recognised as a client of its own; the application's own poll is
    assert [d.line for d in found] == [12]


def test_slack_socket_mode_is_not_a_duplicate_consumer(tmp_path):
    assert og602(tmp_path, "app/main.py", """
        import asyncio
        from contextlib import asynccontextmanager

        from fastapi import FastAPI
        from slack_bolt.adapter.socket_mode.async_handler import AsyncSocketModeHandler
        from slack_bolt.async_app import AsyncApp

        slack = AsyncApp(token="x")


        @asynccontextmanager
        async def lifespan(app: FastAPI):
            task = asyncio.create_task(AsyncSocketModeHandler(slack, "y").start_async())
            yield
            task.cancel()


        app = FastAPI(lifespan=lifespan)
    """) == []


def test_tests_are_exempt(tmp_path):
    assert og602(tmp_path, "tests/test_bot.py", """
        from contextlib import asynccontextmanager

        import discord
        from fastapi import FastAPI

        client = discord.Client(intents=discord.Intents.default())


        @asynccontextmanager
        async def lifespan(app: FastAPI):
            await client.start("t")
            yield


        app = FastAPI(lifespan=lifespan)
    """) == []
