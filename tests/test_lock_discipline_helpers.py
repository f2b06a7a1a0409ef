"""Advisory locks read through the project's own helpers.

- OG105: a session-level lock taken and released through a project class's methods (a typed parameter, a
  module-level or imported instance, ``self.db`` set in ``__init__``) or functions of another module (under
  an alias too) is judged as if the SQL were sent in place: an unlock an exception can skip is reported; one in
  ``finally:``, in an ``except`` that catches everything and raises again, or handed to an exit stack is not.
- OG104: a key computed by a small function of the project (in another module too, as a method, stored in a
  local first) is read through it; ``hash()`` of an int, a clock cut into periods and a hash seed the
  deployment fixes are stable.
"""
from __future__ import annotations

import pytest
from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)


# -- OG105: lock and unlock through a project class -----------------------------------------------------------
DATABASE = """\
    import psycopg2


    class Warehouse:
        def __init__(self, dsn: str) -> None:
            self._conn = psycopg2.connect(dsn)
            self._conn.autocommit = True

        def run(self, sql: str, params: tuple = ()) -> None:
            with self._conn.cursor() as cur:
                cur.execute(sql, params)

        def take_job_lock(self, key: int) -> bool:
            with self._conn.cursor() as cur:
                cur.execute("SELECT pg_try_advisory_lock(%s)", (key,))
                return cur.fetchone()[0]

        def drop_job_lock(self, key: int) -> None:
            with self._conn.cursor() as cur:
                cur.execute("SELECT pg_advisory_unlock(%s)", (key,))
"""

#: Released on the success path only (line 11).
RESTOCK = """\
    import httpx

    from depot.store import Warehouse

    RESTOCK_KEY = 7_300_021


    def reorder_low_stock(wh: Warehouse) -> None:
        if not wh.take_job_lock(RESTOCK_KEY):
            return
        httpx.post("https://supplier.example.org/orders", json={"sku": "bolts"})
        wh.drop_job_lock(RESTOCK_KEY)
"""

RESTOCK_FINALLY = """\
    import httpx

    from depot.store import Warehouse

    RESTOCK_KEY = 7_300_021


    def reorder_low_stock(wh: Warehouse) -> None:
        if not wh.take_job_lock(RESTOCK_KEY):
            return
        try:
            httpx.post("https://supplier.example.org/orders", json={"sku": "bolts"})
        finally:
            wh.drop_job_lock(RESTOCK_KEY)
"""

DEPOT = {"pyproject.toml": "[project]\nname = 'depot'\n", "depot/__init__.py": "", "depot/store.py": DATABASE}


def test_an_unlock_through_a_method_of_a_typed_parameter_outside_finally_is_reported(tmp_path):
    write(tmp_path, {**DEPOT, "depot/restock.py": RESTOCK})
    assert findings(tmp_path, "depot/restock.py", codes=("OG105",)) == [(12, "OG105")]


def test_the_same_unlock_in_finally_is_clean(tmp_path):
    write(tmp_path, {**DEPOT, "depot/restock.py": RESTOCK_FINALLY})
    assert findings(tmp_path, "depot/restock.py", codes=("OG105",)) == []


def test_the_class_in_the_same_module_through_a_module_level_instance(tmp_path):
    job = (DATABASE + "\n\n" + RESTOCK.replace("from depot.store import Warehouse\n", "")
           .replace("import httpx\n", "")
           .replace("def reorder_low_stock(wh: Warehouse)", "wh = Warehouse('dbname=depot')\n\n\n    def reorder_low_stock()"))
    job = "    import httpx\n" + job
    write(tmp_path, {**DEPOT, "depot/restock.py": job})
    unlock_line = next(i for i, line in enumerate(job.splitlines(), 1) if "wh.drop_job_lock(RESTOCK_KEY)" in line)
    assert findings(tmp_path, "depot/restock.py", codes=("OG105",)) == [(unlock_line, "OG105")]


@pytest.mark.parametrize("importing, receiver", [
    ("from depot.store import warehouse as wh", "wh"),
    ("from depot import store", "store.warehouse"),
])
def test_an_imported_instance_of_the_class(tmp_path, importing, receiver):
    store = DATABASE + "\n\n    warehouse = Warehouse('dbname=depot')\n"
    job = RESTOCK.replace("from depot.store import Warehouse", importing).replace(
        "def reorder_low_stock(wh: Warehouse)", "def reorder_low_stock()").replace("wh.", receiver + ".")
    write(tmp_path, {**DEPOT, "depot/store.py": store, "depot/restock.py": job})
    unlock_line = next(i for i, line in enumerate(job.splitlines(), 1) if ".drop_job_lock(RESTOCK_KEY)" in line)
    assert findings(tmp_path, "depot/restock.py", codes=("OG105",)) == [(unlock_line, "OG105")]


SERVICE = """\
    import httpx

    from depot.store import Warehouse

    RESTOCK_KEY = 7_300_021


    class Restocker:
        def __init__(self, dsn: str) -> None:
            self.db = Warehouse(dsn)

        def run(self) -> None:
            if not self.db.take_job_lock(RESTOCK_KEY):
                return
            httpx.post("https://supplier.example.org/orders", json={"sku": "bolts"})
            self.db.drop_job_lock(RESTOCK_KEY)
"""


def test_a_method_on_an_attribute_set_in_init(tmp_path):
    write(tmp_path, {**DEPOT, "depot/restock.py": SERVICE})
    assert findings(tmp_path, "depot/restock.py", codes=("OG105",)) == [(16, "OG105")]


def test_a_method_on_an_attribute_set_in_init_released_in_finally_is_clean(tmp_path):
    guarded = SERVICE.replace("""            httpx.post("https://supplier.example.org/orders", json={"sku": "bolts"})
            self.db.drop_job_lock(RESTOCK_KEY)""", """            try:
                httpx.post("https://supplier.example.org/orders", json={"sku": "bolts"})
            finally:
                self.db.drop_job_lock(RESTOCK_KEY)""")
    write(tmp_path, {**DEPOT, "depot/restock.py": guarded})
    assert findings(tmp_path, "depot/restock.py", codes=("OG105",)) == []


def test_a_wrapper_method_over_the_class_is_followed(tmp_path):
    """``JobLock.hold()`` only calls ``Warehouse.take_job_lock``: it takes the lock as much as that does."""
    wrapper = """\
        from depot.store import Warehouse


        class JobLock:
            def __init__(self, db: Warehouse, key: int) -> None:
                self.db = db
                self.key = key

            def hold(self) -> bool:
                return self.db.take_job_lock(self.key)

            def let_go(self) -> None:
                self.db.drop_job_lock(self.key)
    """
    job = """\
        import httpx

        from depot.joblock import JobLock


        def reorder_low_stock(lock: JobLock) -> None:
            if not lock.hold():
                return
            httpx.post("https://supplier.example.org/orders", json={"sku": "bolts"})
            lock.let_go()
    """
    write(tmp_path, {**DEPOT, "depot/joblock.py": wrapper, "depot/restock.py": job})
    assert findings(tmp_path, "depot/restock.py", codes=("OG105",)) == [(10, "OG105")]


@pytest.mark.parametrize("shape", [
    # an except that catches everything, releases and raises again, the success path releasing too
    """        try:
            httpx.post("https://supplier.example.org/orders", json={"sku": "bolts"})
        except BaseException:
            wh.drop_job_lock(RESTOCK_KEY)
            raise
        wh.drop_job_lock(RESTOCK_KEY)
""",
    # the work cannot raise past the unlock: its try catches everything and swallows it
    """        try:
            httpx.post("https://supplier.example.org/orders", json={"sku": "bolts"})
        except Exception:
            pass
        wh.drop_job_lock(RESTOCK_KEY)
""",
])
def test_other_shapes_that_always_release_are_clean(tmp_path, shape):
    job = RESTOCK.replace("""        httpx.post("https://supplier.example.org/orders", json={"sku": "bolts"})
        wh.drop_job_lock(RESTOCK_KEY)
""", shape)
    write(tmp_path, {**DEPOT, "depot/restock.py": job})
    assert findings(tmp_path, "depot/restock.py", codes=("OG105",)) == []


def test_an_except_that_releases_but_swallows_narrow_errors_is_reported(tmp_path):
    job = RESTOCK.replace("""        httpx.post("https://supplier.example.org/orders", json={"sku": "bolts"})
        wh.drop_job_lock(RESTOCK_KEY)
""", """        try:
            httpx.post("https://supplier.example.org/orders", json={"sku": "bolts"})
        except httpx.HTTPError:
            pass
        wh.drop_job_lock(RESTOCK_KEY)
""")
    write(tmp_path, {**DEPOT, "depot/restock.py": job})
    assert findings(tmp_path, "depot/restock.py", codes=("OG105",)) == [(15, "OG105")]


def test_an_unlock_handed_to_an_exit_stack_is_clean(tmp_path):
    job = """\
        import contextlib

        import httpx

        from depot.store import Warehouse

        RESTOCK_KEY = 7_300_021


        def reorder_low_stock(wh: Warehouse) -> None:
            if not wh.take_job_lock(RESTOCK_KEY):
                return
            with contextlib.ExitStack() as stack:
                stack.callback(wh.drop_job_lock, RESTOCK_KEY)
                httpx.post("https://supplier.example.org/orders", json={"sku": "bolts"})
    """
    write(tmp_path, {**DEPOT, "depot/restock.py": job})
    assert findings(tmp_path, "depot/restock.py", codes=("OG105",)) == []


def test_a_transaction_level_lock_through_a_helper_is_not_judged(tmp_path):
    store = DATABASE.replace("pg_try_advisory_lock", "pg_try_advisory_xact_lock")
    write(tmp_path, {**DEPOT, "depot/store.py": store, "depot/restock.py": RESTOCK})
    assert findings(tmp_path, "depot/restock.py", codes=("OG105",)) == []


# -- OG105: lock and unlock through functions of another module ----------------------------------------------
PGLOCKS = """\
    def grab(conn, key: int) -> bool:
        return conn.execute("SELECT pg_try_advisory_lock(%s)", (key,)).fetchone()[0]


    def hand_back(conn, key: int) -> None:
        conn.execute("SELECT pg_advisory_unlock(%s)", (key,))
"""

ROTATE = """\
    import psycopg

    from depot import pglocks as locks


    def rotate_tokens(dsn: str) -> None:
        conn = psycopg.connect(dsn, autocommit=True)
        if not locks.grab(conn, 4411):
            return
        conn.execute("UPDATE api_tokens SET rotated_at = now() WHERE rotated_at < now() - interval '30 days'")
        locks.hand_back(conn, 4411)
"""


def test_functions_of_another_module_under_an_alias(tmp_path):
    write(tmp_path, {**DEPOT, "depot/pglocks.py": PGLOCKS, "depot/rotate.py": ROTATE})
    assert findings(tmp_path, "depot/rotate.py", codes=("OG105",)) == [(11, "OG105")]


def test_functions_of_another_module_imported_by_name_in_finally_are_clean(tmp_path):
    job = ROTATE.replace("from depot import pglocks as locks", "from depot.pglocks import grab, hand_back").replace(
        "locks.", "").replace("""        conn.execute("UPDATE api_tokens SET rotated_at = now() WHERE rotated_at < now() - interval '30 days'")
        hand_back(conn, 4411)""", """        try:
            conn.execute("UPDATE api_tokens SET rotated_at = now() WHERE rotated_at < now() - interval '30 days'")
        finally:
            hand_back(conn, 4411)""")
    write(tmp_path, {**DEPOT, "depot/pglocks.py": PGLOCKS, "depot/rotate.py": job})
    assert findings(tmp_path, "depot/rotate.py", codes=("OG105",)) == []


def test_functions_imported_by_name_outside_finally_are_reported(tmp_path):
    job = ROTATE.replace("from depot import pglocks as locks", "from depot.pglocks import grab, hand_back").replace(
        "locks.", "")
    write(tmp_path, {**DEPOT, "depot/pglocks.py": PGLOCKS, "depot/rotate.py": job})
    assert findings(tmp_path, "depot/rotate.py", codes=("OG105",)) == [(11, "OG105")]


def test_an_unlock_by_sql_after_a_lock_through_a_helper(tmp_path):
    job = ROTATE.replace("locks.hand_back(conn, 4411)", 'conn.execute("SELECT pg_advisory_unlock(%s)", (4411,))')
    write(tmp_path, {**DEPOT, "depot/pglocks.py": PGLOCKS, "depot/rotate.py": job})
    assert findings(tmp_path, "depot/rotate.py", codes=("OG105",)) == [(11, "OG105")]


def test_a_direct_lock_released_in_a_reraising_handler_and_after_is_clean(tmp_path):
    job = """\
        import psycopg


        def rotate_tokens(dsn: str) -> None:
            conn = psycopg.connect(dsn, autocommit=True)
            if not conn.execute("SELECT pg_try_advisory_lock(%s)", (4411,)).fetchone()[0]:
                return
            try:
                conn.execute("UPDATE api_tokens SET rotated_at = now()")
            except BaseException:
                conn.execute("SELECT pg_advisory_unlock(%s)", (4411,))
                raise
            conn.execute("SELECT pg_advisory_unlock(%s)", (4411,))
    """
    write(tmp_path, {**DEPOT, "depot/rotate.py": job})
    assert findings(tmp_path, "depot/rotate.py", codes=("OG105",)) == []


# -- OG104: keys computed by the project's functions ---------------------------------------------------------
KEYED = """\
    import psycopg

    MASK = 0x7FFF_FFFF_FFFF_FFFF


    def slot_key(name: str) -> int:
        return hash(name) & MASK


    def settle_night(conn: psycopg.Connection) -> None:
        with conn.transaction():
            if not conn.execute("SELECT pg_try_advisory_xact_lock(%s)", (slot_key("settle"),)).fetchone()[0]:
                return
            conn.execute("UPDATE ledgers SET settled = true WHERE day < current_date")
"""

STABLE = KEYED.replace("import psycopg\n", "import zlib\n\n    import psycopg\n").replace(
    "return hash(name) & MASK", "return zlib.crc32(name.encode()) & MASK")


def test_a_key_from_a_small_function_of_the_module_is_reported_at_the_hash(tmp_path):
    write(tmp_path, {"ledger/__init__.py": "", "ledger/night.py": KEYED})
    assert findings(tmp_path, "ledger/night.py", codes=("OG104",)) == [(7, "OG104")]


def test_a_stable_digest_in_the_function_is_clean(tmp_path):
    write(tmp_path, {"ledger/__init__.py": "", "ledger/night.py": STABLE})
    assert findings(tmp_path, "ledger/night.py", codes=("OG104",)) == []


def test_the_key_stored_in_a_local_first(tmp_path):
    local = KEYED.replace("""            if not conn.execute("SELECT pg_try_advisory_xact_lock(%s)", (slot_key("settle"),)).fetchone()[0]:""",
                          """            key = slot_key("settle")
            if not conn.execute("SELECT pg_try_advisory_xact_lock(%s)", (key,)).fetchone()[0]:""")
    write(tmp_path, {"ledger/__init__.py": "", "ledger/night.py": local})
    assert findings(tmp_path, "ledger/night.py", codes=("OG104",)) == [(7, "OG104")]


KEYS_MODULE = """\
    MASK = 0x7FFF_FFFF_FFFF_FFFF


    def slot_key(name: str) -> int:
        digest = hash(name)
        return digest & MASK
"""

NIGHT = """\
    import psycopg

    from ledger.keys import slot_key as key_for


    def settle_night(conn: psycopg.Connection) -> None:
        with conn.transaction():
            key = key_for("settle")
            if not conn.execute("SELECT pg_try_advisory_xact_lock(%s)", (key,)).fetchone()[0]:
                return
            conn.execute("UPDATE ledgers SET settled = true WHERE day < current_date")
"""


def test_a_function_of_another_module_under_an_alias_is_reported_where_it_hashes(tmp_path):
    write(tmp_path, {"pyproject.toml": "[project]\nname = 'ledger'\n", "ledger/__init__.py": "",
                     "ledger/keys.py": KEYS_MODULE, "ledger/night.py": NIGHT})
    assert findings(tmp_path, "ledger/keys.py", codes=("OG104",)) == [(5, "OG104")]
    assert findings(tmp_path, "ledger/night.py", codes=("OG104",)) == []


def test_a_function_of_another_module_nothing_locks_with_is_not_reported(tmp_path):
    unlocked = NIGHT.replace("pg_try_advisory_xact_lock(%s)", "count(*) FROM ledgers WHERE id = %s")
    write(tmp_path, {"pyproject.toml": "[project]\nname = 'ledger'\n", "ledger/__init__.py": "",
                     "ledger/keys.py": KEYS_MODULE, "ledger/night.py": unlocked})
    assert findings(tmp_path, "ledger/keys.py", codes=("OG104",)) == []


def test_a_method_of_a_module_level_instance(tmp_path):
    method = """\
        import psycopg


        class Slots:
            def key(self, name: str) -> int:
                return hash(("slots", name))


        slots = Slots()


        def settle_night(conn: psycopg.Connection) -> None:
            with conn.transaction():
                if not conn.execute("SELECT pg_try_advisory_xact_lock(%s)", (slots.key("settle"),)).fetchone()[0]:
                    return
                conn.execute("UPDATE ledgers SET settled = true WHERE day < current_date")
    """
    write(tmp_path, {"ledger/__init__.py": "", "ledger/night.py": method})
    assert findings(tmp_path, "ledger/night.py", codes=("OG104",)) == [(6, "OG104")]


#: The key hashed where the lock is taken (line 11).
DIRECT = KEYED.replace('(slot_key("settle"),)', '(hash("settle"),)')


@pytest.mark.parametrize("variant", ["direct", "helper"])
def test_hash_of_an_int_is_the_int_in_every_process(tmp_path, variant):
    numbered = DIRECT.replace('hash("settle")', "hash(42)") if variant == "direct" else KEYED.replace(
        "def slot_key(name: str)", "def slot_key(number: int)").replace("hash(name)", "hash(number)").replace(
        'slot_key("settle")', "slot_key(42)")
    write(tmp_path, {"ledger/__init__.py": "", "ledger/night.py": numbered})
    assert findings(tmp_path, "ledger/night.py", codes=("OG104",)) == []


def test_a_hash_seed_the_deployment_fixes_makes_hash_stable(tmp_path):
    write(tmp_path, {"pyproject.toml": "[project]\nname = 'ledger'\n", "ledger/__init__.py": "",
                     "ledger/night.py": DIRECT,
                     "Dockerfile": "FROM python:3.12-slim\nENV PYTHONHASHSEED=0\nCMD [\"python\", \"-m\", \"ledger.night\"]\n"})
    assert findings(tmp_path, "ledger/night.py", codes=("OG104",)) == []


def test_a_random_hash_seed_in_the_deployment_is_no_fix(tmp_path):
    write(tmp_path, {"pyproject.toml": "[project]\nname = 'ledger'\n", "ledger/__init__.py": "",
                     "ledger/night.py": KEYED,
                     "Dockerfile": "FROM python:3.12-slim\nENV PYTHONHASHSEED=random\nCMD [\"python\", \"-m\", \"ledger.night\"]\n"})
    assert findings(tmp_path, "ledger/night.py", codes=("OG104",)) == [(7, "OG104")]


@pytest.mark.parametrize("value, flagged", [
    ("socket.gethostname()", True),
    ("int(time.time())", True),
    ("int(time.time() // 3600)", False),
])
def test_host_names_and_clocks(tmp_path, value, flagged):
    job = f"""\
        import socket
        import time

        import psycopg


        def settle_night(conn: psycopg.Connection) -> None:
            key = {value}
            with conn.transaction():
                if not conn.execute("SELECT pg_try_advisory_xact_lock(%s)", (key,)).fetchone()[0]:
                    return
                conn.execute("UPDATE ledgers SET settled = true WHERE day < current_date")
    """
    write(tmp_path, {"ledger/__init__.py": "", "ledger/night.py": job})
    assert findings(tmp_path, "ledger/night.py", codes=("OG104",)) == ([(8, "OG104")] if flagged else [])


# -- OG106: a helper's answer dropped ----------------------------------------------------------------------------
TRY_HELPER = """\
    from sqlalchemy import text


    def hold_slot(session, key: int) -> bool:
        return bool(session.scalar(text("SELECT pg_try_advisory_xact_lock(:k)"), {"k": key}))
"""

SWEEP = """\
    from sqlalchemy import select

    from kennel.db import Session
    from kennel.slots import hold_slot


    def sweep_bookings() -> None:
        with Session() as session, session.begin():
            {call}
            for booking in session.scalars(select(Booking).where(Booking.reminded.is_(False))):
                booking.reminded = True
"""


@pytest.mark.parametrize("call, reported", [
    ("hold_slot(session, 4410)", True),
    ("if not hold_slot(session, 4410):\n                return", False),
    ("got = hold_slot(session, 4410)\n            if not got:\n                return", False),
])
def test_a_dropped_answer_of_a_project_try_lock_helper_is_og106(tmp_path, call, reported):
    sweep = SWEEP.replace("{call}", call)
    write(tmp_path, {"kennel/__init__.py": "", "kennel/db.py": "Session = None\n", "kennel/slots.py": TRY_HELPER,
                     "kennel/sweep.py": sweep})
    line = next(i for i, text in enumerate(sweep.splitlines(), 1) if "hold_slot(session" in text)
    assert findings(tmp_path, "kennel/sweep.py", codes=("OG106",)) == ([(line, "OG106")] if reported else [])


def test_a_dropped_row_count_of_an_update_helper_is_no_lock_answer(tmp_path):
    # A helper returning how many rows its conditional UPDATE changed answers something else than a lock.
    counting = """\
        from sqlalchemy import text


        def hold_slot(session, key: int) -> int:
            result = session.execute(text("UPDATE slots SET held = true WHERE id = :k AND NOT held"), {"k": key})
            return result.rowcount
    """
    sweep = SWEEP.replace("{call}", "hold_slot(session, 4410)")
    write(tmp_path, {"kennel/__init__.py": "", "kennel/db.py": "Session = None\n", "kennel/slots.py": counting,
                     "kennel/sweep.py": sweep})
    assert findings(tmp_path, "kennel/sweep.py", codes=("OG106",)) == []
