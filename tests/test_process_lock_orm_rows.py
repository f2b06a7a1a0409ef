"""OG606 over SQLAlchemy's ORM: a process lock around ``session.get(Model, pk)`` and a change of the instance
that the session writes back (a ``with sessionmaker.begin() as session`` block, or a commit) is a
read-then-write of shared rows the lock does not make atomic across replicas.  Rows read ``with_for_update``
are serialised by the database; an instance only read is no write."""
from __future__ import annotations

import pytest

from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

MODELS = """\
    from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column


    class Base(DeclarativeBase):
        pass


    class Payout(Base):
        __tablename__ = "payouts"
        id: Mapped[int] = mapped_column(primary_key=True)
        status: Mapped[str]
        account: Mapped[str]
"""

SERVICE = """\
    import threading

    from .models import Payout

    _pay_lock = threading.Lock()


    class Payouts:
        def __init__(self, sessions, bank):
            self.sessions = sessions
            self.bank = bank

        def pay(self, payout_id):
            with _pay_lock:
                {body}
"""

BODIES = {
    "begin block": """with self.sessions.begin() as session:
                    payout = session.get(Payout, payout_id{lock})
                    if payout.status != "approved":
                        return
                    self.bank.send(payout.account)
                    payout.status = "{new}"
""",
    "explicit commit": """session = self.sessions()
                payout = session.get(Payout, payout_id{lock})
                if payout.status != "approved":
                    return
                self.bank.send(payout.account)
                payout.status = "{new}"
                session.commit()
""",
}


@pytest.mark.parametrize("body", sorted(BODIES))
def test_a_process_lock_around_a_loaded_row_written_back(tmp_path, body):
    text = BODIES[body].replace("{lock}", "").replace("{new}", "paid")
    write(tmp_path, {"pay/__init__.py": "", "pay/models.py": MODELS, "pay/service.py": SERVICE.replace("{body}", text)})
    assert findings(tmp_path, "pay/service.py", codes=("OG606",)) == [(14, "OG606")]


@pytest.mark.parametrize("body", sorted(BODIES))
def test_rows_read_for_update_are_serialised(tmp_path, body):
    text = BODIES[body].replace("{lock}", ", with_for_update=True").replace("{new}", "paid")
    write(tmp_path, {"pay/__init__.py": "", "pay/models.py": MODELS, "pay/service.py": SERVICE.replace("{body}", text)})
    assert findings(tmp_path, "pay/service.py", codes=("OG606",)) == []


def test_a_row_only_read_is_no_write(tmp_path):
    text = """with self.sessions.begin() as session:
                    payout = session.get(Payout, payout_id)
                    return payout.status
"""
    write(tmp_path, {"pay/__init__.py": "", "pay/models.py": MODELS, "pay/service.py": SERVICE.replace("{body}", text)})
    assert findings(tmp_path, "pay/service.py", codes=("OG606",)) == []


def test_a_session_that_never_writes_back(tmp_path):
    # Changes to an instance of a session that is neither committed nor in a ``begin()`` block stay in memory.
    text = """session = self.sessions()
                payout = session.get(Payout, payout_id)
                payout.status = "seen"
                return payout
"""
    write(tmp_path, {"pay/__init__.py": "", "pay/models.py": MODELS, "pay/service.py": SERVICE.replace("{body}", text)})
    assert findings(tmp_path, "pay/service.py", codes=("OG606",)) == []
