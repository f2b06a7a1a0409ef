"""An advisory lock keyed on a number a per-process counter hands out in first-use order: each replica numbers
the same name differently, so two replicas lock different keys for the same row.  A key derived from the name
itself (a CRC) is the same everywhere."""
from __future__ import annotations

import textwrap

import pytest

from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

NUMBERING = textwrap.dedent("""
    import itertools
    import zlib


    class KeyBook:
        def __init__(self):
            self._next = itertools.count(500)
            self._known = {}

        def number(self, name):
            key = self._known.get(name)
            if key is None:
                key = {minted}
                self._known[name] = key
            return key


    book = KeyBook()
    """)

LOCKING = textwrap.dedent("""
    from {import_line}


    def refill(conn, bin_code):
        with conn.cursor() as cur:
            cur.execute("SELECT pg_advisory_xact_lock(%s)", ({book}.number("bin:" + bin_code),))
            cur.execute("INSERT INTO refills (bin_code) VALUES (%s)", (bin_code,))
    """)


@pytest.mark.parametrize("import_line, book", [("stock.numbering import book", "book"),
                                               ("stock.numbering import book as bin_keys", "bin_keys")])
def test_a_counter_numbered_key_is_flagged_where_it_is_minted(tmp_path, import_line, book):
    write(tmp_path, {"stock/__init__.py": "",
                     "stock/numbering.py": NUMBERING.replace("{minted}", "next(self._next)"),
                     "stock/refill.py": LOCKING.replace("{import_line}", import_line).replace("{book}", book)})
    assert findings(tmp_path, "stock/numbering.py", codes=("OG104",)) == [(14, "OG104")]


def test_a_key_derived_from_the_name_is_clean(tmp_path):
    write(tmp_path, {"stock/__init__.py": "",
                     "stock/numbering.py": NUMBERING.replace("{minted}", 'zlib.crc32(name.encode("utf-8"))'),
                     "stock/refill.py": LOCKING.replace("{import_line}", "stock.numbering import book")
                                               .replace("{book}", "book")})
    assert findings(tmp_path, "stock/numbering.py", codes=("OG104",)) == []


def test_a_module_counter_in_the_locking_module(tmp_path):
    source = textwrap.dedent("""
        from itertools import count

        _serial = count(1)


        def hold_bin(conn):
            key = next(_serial)
            conn.execute("SELECT pg_advisory_lock(%s)", (key,))
        """)
    write(tmp_path, {"binlock.py": source})
    assert findings(tmp_path, "binlock.py", codes=("OG104",)) == [(8, "OG104")]
