"""OG302 cases the rule doc does not show: unclaimed pickups, check-then-act on a row's state, single-use
consumes, and the claims (locks, leases, conditional transitions) that make each of them clean."""
from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from onceguard.project import index as project
from onceguard.config import Config, from_mapping
from onceguard.engine.check import check_source


@pytest.fixture(autouse=True)
def fresh_project_cache():
    project.clear_cache()
    yield
    project.clear_cache()


def lines(source: str, path: str = "app/service.py") -> list:
    source = textwrap.dedent(source)
    return sorted(d.line for d in check_source(source.encode(), path, Config()) if d.code == "OG302")


def write(tmp_path: Path, rel: str, source: str) -> Path:
    path = tmp_path / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(source), encoding="utf-8")
    return path


def project_lines(path: Path, root: Path) -> list:
    config = from_mapping({}, root=str(root))
    return sorted(d.line for d in check_source(path.read_bytes(), str(path), config, cross_file=True)
                  if d.code == "OG302")


# -- pickups ---------------------------------------------------------------------------------------------
def test_status_filter_inside_exists_is_not_a_pickup():
    assert lines("""
        from django.db.models import Exists, OuterRef
        from .models import Attachment, Mail

        def drop_unused(now):
            needed = Exists(Mail.objects.filter(files__pk=OuterRef("pk"), status__in=("queued",)))
            for attachment in Attachment.objects.filter(expires__lt=now).exclude(needed):
                notify(attachment)
                attachment.delete()
    """) == []


def test_a_sweep_that_only_deletes_is_silent_but_one_that_publishes_is_not():
    sweep = """
        import logging
        from .models import Snapshot

        def purge():
            for snapshot in Snapshot.objects.filter(status="deleting")[:100]:
                try:
                    {work}
                    snapshot.delete()
                except OSError:
                    logging.getLogger(__name__).exception("failed")
    """
    assert lines(sweep.format(work="pass")) == []
    assert lines(sweep.format(work="publish(snapshot.id)")) == [6]


def test_rows_read_again_under_a_row_lock_are_claimed():
    source = """
        from django.db import transaction
        from .models import Order

        def remind():
            for order in Order.objects.filter(status="pending", reminded=False):
                with transaction.atomic():
                    order = Order.objects.{loader}.get(pk=order.pk)
                    if order.reminded:
                        continue
                    order.reminded = True
                    order.save()
                    order.send_mail()
    """
    assert lines(source.format(loader="select_for_update()")) == []
    assert lines(source.format(loader="all()")) == [6]


LEASED = """
    from sqlalchemy import select, update
    from .models import Lease, Sub

    async def take(session, owner):
        result = await session.execute(update(Lease).where(Lease.owner.is_(None)).values(owner=owner))
        return result.rowcount == 1

    async def renew_all(session):
        for sub in (await session.scalars(select(Sub).where(Sub.state == "expiring"))).all():
            await renew_remote(sub)
            sub.state = "active"
        await session.commit()

    async def tick(session, owner):
        held = await take(session, owner)
        if not held:
            return
        await renew_all(session)
"""


def test_a_pickup_run_only_after_the_callers_lease_is_claimed():
    assert lines(LEASED) == []


def test_one_caller_without_the_lease_brings_the_finding_back():
    assert lines(LEASED + """
    async def renew_now(session):
        await renew_all(session)
    """) == [10]


# -- check-then-act --------------------------------------------------------------------------------------
def test_unconditional_transition_before_the_work_is_reported_on_the_write():
    assert lines("""
        from .models import Export

        def export(export_id):
            job = Export.objects.get(pk=export_id)
            if job.status == Export.Status.RUNNING:
                return
            job.status = Export.Status.RUNNING
            job.save(update_fields=["status"])
            enqueue(render_export, job.id)
    """) == [8]


def test_a_test_that_refuses_another_state_is_not_a_dedupe():
    assert lines("""
        def finish(query, rows):
            if query.status == "stopped":
                return
            query.status = "success"
            query.save()
            upload(query.id, rows)
    """) == []


def test_work_on_the_other_branch_of_the_write_does_not_count():
    assert lines("""
        from .models import Migration

        def apply(name, sql, reverse):
            migration = Migration.objects.get(name=name)
            if migration.status == "finished":
                return
            if not reverse:
                migration.status = "finished"
                migration.save()
            else:
                run_sql(sql)
    """) == []


_EXPIRED_BRANCH = """
    from .models import Coupon

    def redeem(code, user):
        coupon = Coupon.objects.get(code=code)
        if coupon.status != "open":
            raise ValueError("used")
        if coupon.expired():
            if coupon.issued_by_system:
                coupon.status = "expired"
                coupon.save()
            {leave}
        grant_credit(user, coupon.amount)
"""


@pytest.mark.parametrize("leave", ['raise ValueError("expired")', "return None"])
def test_work_after_a_branch_that_ends_in_raise_is_not_reached_from_its_write(leave):
    # The terminal status is written in a branch nested in one that always leaves: the grant after it
    # never runs after that write.
    assert lines(_EXPIRED_BRANCH.format(leave=leave)) == []


def test_work_after_a_nested_branch_that_falls_through_is_reached():
    assert lines(_EXPIRED_BRANCH.format(leave="pass")) == [10]


def test_work_after_the_loop_a_break_leaves_is_reached():
    assert lines("""
        from .models import Order

        def ship(order_id, parcels):
            order = Order.objects.get(pk=order_id)
            if order.status != "packed":
                return
            for parcel in parcels:
                if parcel.ready:
                    order.status = "shipped"
                    order.save()
                    break
            notify_customer(order)
    """) == [10]


_ACCEPT = """
    from sqlalchemy.exc import IntegrityError

    from .models import Invite, Membership, db

    def accept(invite_id, user_id):
        invite = Invite.query.filter_by(id=invite_id).one()
        if invite.status != "open":
            raise ValueError("not open")
        {claim}
        invite.status = "accepted"
        db.session.commit()
        notify_team(invite.team_id, user_id)
"""

_INSERT_CLAIM = """try:
            db.session.add(Membership(team_id=invite.team_id, user_id=user_id))
            db.session.commit()
        except {error}:
            db.session.rollback()
            return None"""


@pytest.mark.parametrize("error", ["IntegrityError", "(IntegrityError, ValueError)", "DatabaseError"])
def test_an_insert_the_database_refuses_twice_is_the_claim(error):
    # Of two requests that passed the test, the second one's membership insert fails and it returns:
    # only one marks the invite and notifies.
    assert lines(_ACCEPT.format(claim=_INSERT_CLAIM.format(error=error))) == []


def test_an_insert_whose_refusal_is_ignored_claims_nothing():
    ignored = _INSERT_CLAIM.format(error="IntegrityError").replace("            return None", "            pass")
    assert lines(_ACCEPT.format(claim=ignored)) == [16]
    assert lines(_ACCEPT.format(claim="pass")) == [11]


def test_methods_preparing_the_row_before_its_save_are_not_the_work():
    assert lines("""
        def mark_pending(order, now):
            if order.status == "paid":
                order.status = "pending"
                order.set_expires(now)
                order.save(update_fields=["status", "expires"])
                order.log_action("marked pending")
    """) == []


def test_send_once_flag_of_self_is_in_memory_state():
    assert lines("""
        class Notifier:
            def flush(self):
                if not self.sent:
                    deliver(self.buffer)
                    self.sent = True
    """) == []


def test_advisory_lock_in_a_with_block_that_closed_does_not_cover_the_call():
    source = """
        from django.db import connection

        class Change:
            def _lock(self):
                with connection.cursor() as cursor:
                    cursor.execute("SELECT pg_advisory_xact_lock(%s)", [self.order.event_id])

            def _settle(self):
                if self.order.status == "pending":
                    self.order.status = "paid"
                    self.order.save()
                    mail_customer(self.order)

            def commit(self):
                {body}
    """
    assert lines(source.format(body="self._lock()\n                self._settle()")) == []
    assert lines(source.format(body="with connection.cursor():\n                    self._lock()\n"
                                    "                self._settle()")) == [11]


def test_rows_from_a_function_that_locks_them_are_claimed(tmp_path):
    write(tmp_path, "app/__init__.py", "")
    write(tmp_path, "app/repo.py", """
        from sqlalchemy import select
        from .models import Alert

        async def due(session, now):
            return (await session.scalars(
                select(Alert).where(Alert.due <= now).with_for_update(skip_locked=True))).all()

        async def due_plain(session, now):
            return (await session.scalars(select(Alert).where(Alert.due <= now))).all()
    """)
    job = """
        from app import repo

        async def alert(session, now):
            rows = await repo.{loader}(session, now)
            for row in rows:
                if row.meta.get("alerted_at") == row.due:
                    continue
                await push(row.user_id)
                await repo.update_alert(row.id, meta={{"alerted_at": row.due}})
    """
    locked = write(tmp_path, "app/jobs.py", job.format(loader="due"))
    assert project_lines(locked, tmp_path) == []
    project.clear_cache()
    plain = write(tmp_path, "app/jobs_plain.py", job.format(loader="due_plain"))
    assert project_lines(plain, tmp_path) == [5]


# -- single-use consumes ---------------------------------------------------------------------------------
def test_consume_through_an_inherited_method_in_another_module(tmp_path):
    write(tmp_path, "tokens/__init__.py", "")
    write(tmp_path, "tokens/base.py", """
        from sqlalchemy import delete
        from .db import session
        from .models import Info

        class Token:
            def remove_info(self, key):
                session.execute(delete(Info).where(Info.key == key))
                session.commit()

            def remove_counted(self, key):
                return session.execute(delete(Info).where(Info.key == key)).rowcount
    """)
    source = """
        from tokens.base import Token

        class OneTimeToken(Token):
            def check(self, presented):
                for key, stored in self.infos().items():
                    if stored == digest(presented):
                        self.{remover}(key)
                        return 1
                return -1
    """
    path = write(tmp_path, "tokens/onetime.py", source.format(remover="remove_info"))
    assert project_lines(path, tmp_path) == [8]
    project.clear_cache()
    path = write(tmp_path, "tokens/counted.py", source.format(remover="remove_counted"))
    assert project_lines(path, tmp_path) == []


def test_consume_that_returns_failure_or_compares_a_constant_is_not_a_consume():
    assert lines("""
        def revoke(code, presented):
            if code.value == presented:
                code.delete()
                return False
            if code.kind == "legacy":
                code.delete()
                return True
    """) == []


def test_rows_of_one_selection_are_not_written_by_a_later_loop_reusing_the_name():
    # Three selections walked by loops that all call their row `ticket`: only the rows written in their own
    # loop count as picked and updated.  The reminder loop writes nothing; the purge loop only deletes.
    source = """
        from sqlalchemy.orm import Session
        from .models import Ticket

        def sweep(session: Session, now):
            reminding = session.query(Ticket).filter(Ticket.status == "open").all()
            for ticket in reminding:
                remind(ticket.owner)
            purging = session.query(Ticket).filter(Ticket.status == "closed").all()
            for ticket in purging:
                session.delete(ticket)
            lapsing = session.query(Ticket).filter(Ticket.status == "waiting").all()
            for ticket in lapsing:
                remind(ticket.owner)
                ticket.status = "lapsed"
            session.commit()
    """
    assert lines(source) == [12]
    # The same writes through one loop name per selection: the same answer.
    renamed = source.replace("for ticket in purging:\n                session.delete(ticket)",
                             "for gone in purging:\n                session.delete(gone)")
    assert renamed != source and lines(renamed) == [12]


RAW_PICKUP = """\
    import psycopg

    from shop.vendor import supplier


    def request_restocks(dsn):
        with psycopg.connect(dsn) as conn:
            with conn.transaction():
                {claim}
                pending = conn.execute(
                    "SELECT sku, amount FROM shelves WHERE ordered_at IS NULL AND count_left < minimum"
                ).fetchall()
                for sku, amount in pending:
                    supplier.order(sku, amount)
                    conn.execute("UPDATE shelves SET ordered_at = now() WHERE sku = %s", (sku,))
"""
_TESTED_XACT_LOCK = ("won = conn.execute('SELECT pg_try_advisory_xact_lock(%s)', (77,)).fetchone()[0]"
                     "\n                if not won:\n                    return")


@pytest.mark.parametrize("claim, flagged", [
    ("pass", [10]),
    (_TESTED_XACT_LOCK, []),  # one replica at a time runs the transaction: the run itself is claimed
])
def test_a_raw_sql_pickup_in_a_claimed_run(claim, flagged):
    assert lines(RAW_PICKUP.format(claim=claim), "shop/restock.py") == flagged
