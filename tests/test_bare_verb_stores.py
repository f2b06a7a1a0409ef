"""A project's store class whose methods are the bare verbs (``load(key)``, ``save(key, doc)``): the record
read, changed in Python and stored again whole is a lost update, as ``load_doc``/``save_doc`` is.  A store that
keeps its records in its own dict, or a plain dict's ``get``/``update``, is no such store."""
from __future__ import annotations

import pytest

from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

STORE = """
    import psycopg2
    from psycopg2.extras import Json


    class QuotaStore:
        def __init__(self, dsn: str) -> None:
            self._conn = psycopg2.connect(dsn)

        def load(self, account: str) -> dict:
            with self._conn, self._conn.cursor() as cur:
                cur.execute("SELECT doc FROM quotas WHERE account = %s", (account,))
                row = cur.fetchone()
            return dict(row[0]) if row else {}

        def save(self, account: str, doc: dict) -> None:
            with self._conn, self._conn.cursor() as cur:
                cur.execute("UPDATE quotas SET doc = %s WHERE account = %s", (Json(doc), account))


    class MemoryQuotas:
        def __init__(self) -> None:
            self._docs = {}

        def load(self, account: str) -> dict:
            return dict(self._docs.get(account, {}))

        def save(self, account: str, doc: dict) -> None:
            self._docs[account] = doc
    """

METER = """
    {imports}


    class Meter:
        def __init__(self, store: {annotation}) -> None:
            self._store = store

        def spend(self, account: str, name: str, amount: int) -> int:
            doc = self._store.load(account)
            doc[name] = doc.get(name, 0) + amount
            self._store.save(account, doc)
            return doc[name]
    """


@pytest.mark.parametrize("imports, annotation", [
    ("from .store import QuotaStore", "QuotaStore"),
    ("from . import store as stores", "stores.QuotaStore"),
])
def test_a_document_loaded_changed_and_saved_through_bare_verbs(tmp_path, imports, annotation):
    write(tmp_path, {"quota/__init__.py": "", "quota/store.py": STORE,
                     "quota/meter.py": METER.format(imports=imports, annotation=annotation)})
    assert findings(tmp_path, "quota/meter.py", codes=("OG301",)) == [(12, "OG301")]


def test_a_store_that_keeps_its_documents_in_its_own_dict(tmp_path):
    write(tmp_path, {"quota/__init__.py": "", "quota/store.py": STORE,
                     "quota/meter.py": METER.format(imports="from .store import MemoryQuotas",
                                                    annotation="MemoryQuotas")})
    assert findings(tmp_path, "quota/meter.py", codes=("OG301",)) == []


def test_a_plain_dict_read_and_updated(tmp_path):
    source = """
        def tally(totals: dict, key: str, seen: dict) -> None:
            current = totals.get(key)
            current = (current or 0) + 1
            totals.update(key, current)
        """
    write(tmp_path, {"quota/__init__.py": "", "quota/tally.py": source})
    assert findings(tmp_path, "quota/tally.py", codes=("OG301",)) == []


def test_the_store_changing_the_document_in_one_statement(tmp_path):
    source = METER.format(imports="from .store import QuotaStore", annotation="QuotaStore").replace(
        """            doc = self._store.load(account)
            doc[name] = doc.get(name, 0) + amount
            self._store.save(account, doc)
            return doc[name]""", """            return self._store.add(account, name, amount)""")
    write(tmp_path, {"quota/__init__.py": "", "quota/store.py": STORE, "quota/meter.py": source})
    assert findings(tmp_path, "quota/meter.py", codes=("OG301",)) == []
