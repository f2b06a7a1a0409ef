"""A row a helper changes from its own value, handed in by a caller in another module that had it from a project
function returning a load (``ticket = lookup_ticket(code)``) and commits the app's session after the call: the
change is a lost update, though the helper's module imports no ORM itself (its models and ``db`` are the
project's own)."""
from __future__ import annotations

from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

EXTENSIONS = """
    from flask_sqlalchemy import SQLAlchemy

    db = SQLAlchemy()
    """

MODELS = """
    from venue.ext import db


    class Ticket(db.Model):
        id = db.Column(db.Integer, primary_key=True)
        code = db.Column(db.String(20), unique=True)
        seats_left = db.Column(db.Integer, nullable=False)
    """

TICKETS = """
    from venue.ext import db
    from venue.models import Ticket


    def lookup_ticket(code):
        return Ticket.query.filter_by(code=code).first()


    def take_seat(ticket):
        if ticket.seats_left <= 0:
            raise ValueError("sold out")
        ticket.seats_left = ticket.seats_left - 1
        db.session.add(ticket)
    """

SAFE_TICKETS = """
    from venue.models import Ticket


    def lookup_ticket(code):
        return Ticket.query.filter_by(code=code).first()


    def take_seat(ticket):
        taken = Ticket.query.filter(Ticket.id == ticket.id, Ticket.seats_left > 0).update(
            {Ticket.seats_left: Ticket.seats_left - 1}, synchronize_session=False)
        if not taken:
            raise ValueError("sold out")
    """

BOOKING = """
    from flask import Blueprint, request

    from venue import tickets
    from venue.ext import db

    bp = Blueprint("booking", __name__)


    @bp.post("/book")
    def book():
        ticket = tickets.lookup_ticket(request.json["code"])
        tickets.take_seat(ticket)
        db.session.commit()
        return {"ok": True}
    """

BOOKING_FROM_IMPORT = """
    from flask import Blueprint, request

    from venue.ext import db
    from venue.tickets import lookup_ticket, take_seat

    bp = Blueprint("booking", __name__)


    def _reserve(code):
        found = lookup_ticket(code)
        take_seat(found)
        db.session.commit()


    @bp.post("/book")
    def book():
        _reserve(request.json["code"])
        return {"ok": True}
    """


def _project(tmp_path, tickets, booking):
    write(tmp_path, {"venue/__init__.py": "", "venue/ext.py": EXTENSIONS, "venue/models.py": MODELS,
                     "venue/tickets.py": tickets, "venue/booking.py": booking})


def test_a_row_from_a_returned_load_changed_by_a_helper_is_flagged(tmp_path):
    _project(tmp_path, TICKETS, BOOKING)
    assert findings(tmp_path, "venue/tickets.py", codes=("OG301",)) == [(13, "OG301")]


def test_the_helper_called_by_its_own_name_from_a_nested_helper(tmp_path):
    _project(tmp_path, TICKETS, BOOKING_FROM_IMPORT)
    assert findings(tmp_path, "venue/tickets.py", codes=("OG301",)) == [(13, "OG301")]


def test_a_count_taken_in_one_update_is_clean(tmp_path):
    _project(tmp_path, SAFE_TICKETS, BOOKING)
    assert findings(tmp_path, "venue/tickets.py", codes=("OG301",)) == []


def test_a_caller_that_never_commits_is_clean(tmp_path):
    _project(tmp_path, TICKETS, BOOKING.replace("    db.session.commit()\n", ""))
    assert findings(tmp_path, "venue/tickets.py", codes=("OG301",)) == []
