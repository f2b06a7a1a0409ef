"""OG201: a pass of a worker loop that runs its work inside a project context manager which enters only for the
replica that won a try-lock (it raises, or returns, before it yields when the lock is taken elsewhere) is claimed;
one that logs the answer and enters anyway claims nothing."""
from __future__ import annotations

import pytest

from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

LOCKS = """\
    from contextlib import contextmanager

    from sqlalchemy import text


    class Taken(Exception):
        pass


    @contextmanager
    def sole(engine, key):
        with engine.connect() as conn:
            got = conn.execute(text("SELECT pg_try_advisory_lock(:k)"), {{"k": key}}).scalar_one()
            conn.commit()
            {on_lost}
            try:
                yield
            finally:
                conn.execute(text("SELECT pg_advisory_unlock(:k)"), {{"k": key}})
                conn.commit()
"""

MAIN = """\
    import threading

    import httpx
    from sqlalchemy import create_engine

    from mill.locks import Taken, sole


    def grind():
        httpx.post("https://mill.example.org/grind")


    def main():
        engine = create_engine("postgresql+psycopg://mill@db/mill")
        stop = threading.Event()
        while not stop.is_set():
            try:
                with sole(engine, 42):
                    grind()
            except Taken:
                pass
            stop.wait(60)


    if __name__ == "__main__":
        main()
"""

DEPLOY = """\
    services:
      mill:
        image: mill
        command: python -m mill.main
        deploy:
          replicas: 2
"""


@pytest.mark.parametrize("on_lost, expected", [
    ("if not got:\n                raise Taken(key)", []),
    ("print('lock', key, got)", [(9, "OG201")]),
])
def test_a_context_manager_that_enters_only_for_the_winner(tmp_path, on_lost, expected):
    write(tmp_path, {"pyproject.toml": "[project]\nname = 'mill'\n", "mill/__init__.py": "",
                     "mill/locks.py": LOCKS.format(on_lost=on_lost), "mill/main.py": MAIN,
                     "docker-compose.yml": DEPLOY})
    assert findings(tmp_path, "mill/main.py", codes=("OG201",)) == expected
