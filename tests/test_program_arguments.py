"""OG201: one program, two roles chosen by its own command line (``python -m relay serve`` and ``python -m relay
settle``).  The deployment files run the serving role in many replicas and the settling role in a workload of one
replica: the loop reached only when the word is ``settle`` runs in one process.  The word may be read as
``sys.argv[1]`` or as the first positional argument of an ``argparse`` parser, and handed to ``main`` as a word or
as the parsed namespace.  A settling workload with more replicas, a branch the serving word reaches, or a word an
option may stand before is still reported."""
from __future__ import annotations

import pytest
from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

PACING = """\
    import asyncio


    async def every_minutes(minutes, work):
        while True:
            await asyncio.sleep(minutes * 60)
            await work()
"""

#: ``{test}`` picks the branch, ``{entry}`` is the ``__main__`` block's way of reading the word.
PROGRAM = """\
    import argparse
    import asyncio
    import sys

    import httpx

    from relay.pacing import every_minutes


    async def settle_totals() -> None:
        async with httpx.AsyncClient() as client:
            await client.post("https://books.example/settle", json={{"all": True}})


    async def answer_pings() -> None:
        server = await asyncio.start_server(lambda reader, writer: writer.close(), port=9000)
        async with server:
            await server.serve_forever()


    async def main({parameter}) -> None:
        if {test}:
            await answer_pings()
        else:
            await every_minutes(15, settle_totals)


    if __name__ == "__main__":
{entry}
"""

ENTRIES = {
    "argparse-word": ("mode", "mode", [
        'parser = argparse.ArgumentParser(prog="relay")',
        'parser.add_argument("mode", choices=["serve", "settle"])',
        "asyncio.run(main(parser.parse_args().mode))",
    ]),
    "argparse-namespace": ("options", "options.mode", [
        'cli = argparse.ArgumentParser(prog="relay")',
        'cli.add_argument("mode")',
        'cli.add_argument("--verbose", action="store_true")',
        "parsed = cli.parse_args()",
        "asyncio.run(main(parsed))",
    ]),
    "sys-argv": ("mode", "mode", ["asyncio.run(main(sys.argv[1]))"]),
}

WORKLOADS = """\
    apiVersion: apps/v1
    kind: Deployment
    metadata:
      name: relay
    spec:
      replicas: 4
      template:
        spec:
          containers:
            - name: relay
              image: registry.example/relay:1
              command: ["python", "-m", "relay", {serving}]
    ---
    apiVersion: apps/v1
    kind: Deployment
    metadata:
      name: relay-settler
    spec:
      replicas: {settlers}
      template:
        spec:
          containers:
            - name: settler
              image: registry.example/relay:1
              command: ["python", "-m", "relay", "settle"]
"""


def _project(tmp_path, entry: str, settlers: int = 1, serving: str = '"serve"', flipped: bool = False) -> None:
    parameter, read, block = ENTRIES[entry]
    test = f'{read} == "{"settle" if flipped else "serve"}"'
    program = PROGRAM.format(parameter=parameter, test=test, entry="\n".join(" " * 8 + line for line in block))
    write(tmp_path, {
        "relay/__init__.py": "",
        "relay/pacing.py": PACING,
        "relay/__main__.py": program,
        "deploy/relay.yaml": WORKLOADS.format(serving=serving, settlers=settlers),
    })


@pytest.mark.parametrize("entry", sorted(ENTRIES))
def test_a_role_the_deployment_runs_in_one_replica(tmp_path, entry):
    _project(tmp_path, entry)
    assert findings(tmp_path, "relay/__main__.py") == []


@pytest.mark.parametrize("entry", sorted(ENTRIES))
def test_a_role_run_in_several_replicas_is_reported(tmp_path, entry):
    _project(tmp_path, entry, settlers=2)
    assert findings(tmp_path, "relay/__main__.py") == [(10, "OG201")]


@pytest.mark.parametrize("entry", sorted(ENTRIES))
def test_the_branch_the_replicated_role_takes_is_reported(tmp_path, entry):
    _project(tmp_path, entry, flipped=True)
    assert findings(tmp_path, "relay/__main__.py") == [(10, "OG201")]


def test_a_word_an_option_may_stand_before_is_not_known(tmp_path):
    # (``--log-level debug serve``: which word argparse takes for ``mode`` depends on the option's own arguments)
    _project(tmp_path, "argparse-word", serving='"--log-level", "debug", "serve"')
    assert findings(tmp_path, "relay/__main__.py") == [(10, "OG201")]


CLOCK = """\
    import sys
    import time

    import requests


    def close_stale_carts() -> None:
        requests.post("https://shop.example/internal/carts/close-stale", timeout=10)


    def run_clock() -> None:
        while True:
            close_stale_carts()
            time.sleep(300)


    def run_consumer() -> None:
        import socket

        listener = socket.create_server(("", 7000))
        while True:
            connection, _ = listener.accept()
            connection.close()


    if __name__ == "__main__":
        role = sys.argv[1]
        if role == "{clock_word}":
            run_clock()
        else:
            run_consumer()
"""

COMPOSE = """\
    services:
      consumer:
        build: .
        command: python shop_worker.py consume
        deploy:
          replicas: 3
      clock:
        build: .
        command: python shop_worker.py clock
        deploy:
          replicas: {clocks}
"""


@pytest.mark.parametrize("clock_word, clocks, expected", [
    ("clock", 1, []),
    ("clock", 2, [(7, "OG201")]),
    ("consume", 1, [(7, "OG201")]),  # the loop is what the replicated consumers run
])
def test_a_script_whose_own_loop_a_word_selects(tmp_path, clock_word, clocks, expected):
    write(tmp_path, {
        "shop_worker.py": CLOCK.format(clock_word=clock_word),
        "docker-compose.yml": COMPOSE.format(clocks=clocks),
    })
    assert findings(tmp_path, "shop_worker.py") == expected
