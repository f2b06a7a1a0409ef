"""OG302 through a repository function: rows picked by their state in one function and returned, then
processed and moved out of that state by its caller, are a pickup wherever the two halves live. A claim in
either half (``with_for_update(skip_locked=True)`` in the selection, a conditional update in the caller)
still makes it safe."""
from __future__ import annotations

import pytest
from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)


MODELS = """\
    from sqlalchemy import String
    from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column


    class Base(DeclarativeBase):
        pass


    class Invoice(Base):
        __tablename__ = "invoices"
        id: Mapped[int] = mapped_column(primary_key=True)
        email: Mapped[str] = mapped_column(String(254))
        state: Mapped[str] = mapped_column(String(16), default="due")
"""
STORE = """\
    from sqlalchemy import select
    from sqlalchemy.orm import Session

    from billing.models import Invoice


    def due_invoices(session: Session, limit: int = 100) -> list[Invoice]:
        query = select(Invoice).where(Invoice.state == "due").order_by(Invoice.id).limit(limit){locked}
        return list(session.scalars(query))
"""
SENDER = """\
    import time

    from billing import store{alias}
    from billing.db import open_session
    from billing.mail import send_invoice


    def send_due() -> int:
        with open_session() as db:
            invoices = {call}(db)
            for invoice in invoices:
                send_invoice(invoice.email)
                invoice.state = "sent"
                db.commit()
            return len(invoices)


    if __name__ == "__main__":
        while True:
            send_due()
            time.sleep(30)
"""
DB = """\
    from sqlalchemy import create_engine
    from sqlalchemy.orm import sessionmaker

    open_session = sessionmaker(create_engine("postgresql://db/billing"))
"""
MAIL = """\
    import smtplib


    def send_invoice(address):
        with smtplib.SMTP("mail.example.org") as server:
            server.sendmail("billing@example.org", [address], "Your invoice")
"""


def project(tmp_path, locked: str = "", alias: str = "", call: str = "store.due_invoices") -> None:
    write(tmp_path, {"billing/__init__.py": "", "billing/models.py": MODELS, "billing/db.py": DB,
                     "billing/mail.py": MAIL, "billing/store.py": STORE.format(locked=locked),
                     "billing/worker.py": SENDER.format(alias=alias, call=call),
                     "Dockerfile": "FROM python:3.12\nCMD [\"python\", \"-m\", \"billing.worker\"]\n"})


@pytest.mark.parametrize("alias, call", [
    ("", "store.due_invoices"),
    (" as invoices_store", "invoices_store.due_invoices"),
])
def test_rows_a_repository_function_picks_by_state(tmp_path, alias, call):
    project(tmp_path, alias=alias, call=call)
    assert findings(tmp_path, "billing/worker.py", codes=("OG302",)) == [(10, "OG302")]


def test_a_from_import_of_the_repository_function(tmp_path):
    project(tmp_path, alias="\n    from billing.store import due_invoices", call="due_invoices")
    assert findings(tmp_path, "billing/worker.py", codes=("OG302",)) == [(11, "OG302")]


def test_rows_the_repository_function_claims(tmp_path):
    project(tmp_path, locked=".with_for_update(skip_locked=True)")
    assert findings(tmp_path, "billing/worker.py", codes=("OG302",)) == []


def test_rows_the_caller_never_moves_out_of_their_state(tmp_path):
    """Read and mailed, but never marked: a reminder to each due invoice, not a pickup (other rules judge
    the repetition)."""
    project(tmp_path)
    worker = tmp_path / "billing/worker.py"
    text = worker.read_text()
    assert 'invoice.state = "sent"' in text
    worker.write_text("".join(line for line in text.splitlines(keepends=True) if "invoice.state" not in line))
    assert findings(tmp_path, "billing/worker.py", codes=("OG302",)) == []
