"""A position kept in a row (a sync cursor, a high-water mark) read without a lock, handed to the fetch of what comes
after it and moved past what came back, while the items fetched are copied in as rows: two workers that read the same
position copy the same items (OG301).  The row locked for the run, copies that skip rows already there, and a value
replaced without copying anything in are left alone."""
from __future__ import annotations

import pytest

from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

DJANGO_MODELS = """
    from django.db import models


    class FeedMark(models.Model):
        feed = models.SlugField(unique=True)
        token = models.CharField(max_length=200, blank=True, default="")


    class Entry(models.Model):
        feed = models.SlugField()
        title = models.CharField(max_length=200)
    """

DJANGO_SYNC = """
    from django.db import transaction

    from .client import entries_since
    from .models import Entry, FeedMark


    def copy_new_entries(feed):
        {load}
        batch = entries_since(feed, mark.token)
        with transaction.atomic():
            Entry.objects.bulk_create(
                [Entry(feed=feed, title=item["title"]) for item in batch["items"]]{skip}
            )
            mark.token = batch["next"]
            mark.save(update_fields=["token"])
        return len(batch["items"])
    """

CLIENT = """
    import requests


    def entries_since(feed, token):
        return requests.get(f"https://feeds.example/{feed}", params={"after": token}, timeout=10).json()
    """

TASKS = """
    from celery import shared_task

    from .sync import copy_new_entries


    @shared_task
    def pull_feed(feed):
        copy_new_entries(feed)
    """

UNLOCKED = "mark = FeedMark.objects.get(feed=feed)"
LOCKED = "mark = FeedMark.objects.select_for_update().get(feed=feed)"


def _django(tmp_path, load=UNLOCKED, skip=""):
    write(tmp_path, {"reader/__init__.py": "", "reader/models.py": DJANGO_MODELS, "reader/client.py": CLIENT,
                     "reader/tasks.py": TASKS,
                     "reader/sync.py": DJANGO_SYNC.replace("{load}", load).replace("{skip}", skip)})
    return findings(tmp_path, "reader/sync.py", codes=("OG301",))


def test_a_cursor_read_without_a_lock_and_moved_past_copied_entries_is_reported(tmp_path):
    assert _django(tmp_path) == [(15, "OG301")]


@pytest.mark.parametrize("load, skip", [
    (LOCKED, ""),  # (a second worker waits, then reads the moved token)
    (UNLOCKED, ", ignore_conflicts=True"),  # (copied twice, stored once)
])
def test_a_locked_cursor_or_copies_that_skip_rows_already_there_are_left_alone(tmp_path, load, skip):
    assert _django(tmp_path, load, skip) == []


SQLALCHEMY_SYNC = """
    from sqlalchemy import ForeignKey
    from sqlalchemy.ext.asyncio import AsyncSession
    from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column


    class Base(DeclarativeBase):
        pass


    class Watermark(Base):
        __tablename__ = "watermarks"
        source: Mapped[str] = mapped_column(primary_key=True)
        seen_until: Mapped[int]


    class Reading(Base):
        __tablename__ = "readings"
        id: Mapped[int] = mapped_column(primary_key=True)
        source: Mapped[str] = mapped_column(ForeignKey("watermarks.source"))
        value: Mapped[float]
        taken_at: Mapped[int]


    async def import_readings(session: AsyncSession, meter, source: str) -> int:
        async with session.begin():
            mark = await session.get(Watermark, source{lock})
            fresh = await meter.readings_after(source, mark.seen_until)
            rows = [Reading(source=source, value=r["value"], taken_at=r["at"]) for r in fresh]
            session.add_all(rows)
            {moved}
        return len(rows)


    async def import_job(ctx, source: str) -> None:
        async with ctx["sessions"]() as session:
            await import_readings(session, ctx["meter"], source)


    class WorkerSettings:
        functions = [import_job]
    """

MOVED = "mark.seen_until = max(row.taken_at for row in rows)"


@pytest.mark.parametrize("lock, moved, expected", [
    ("", MOVED, [(31, "OG301")]),
    (", with_for_update=True", MOVED, []),
    # the same value set without anything copied in: each worker writes what the other would
    ("", "mark.seen_until = 0", []),
])
def test_a_high_water_mark_an_async_session_moves_past_copied_rows(tmp_path, lock, moved, expected):
    write(tmp_path, {"meters/__init__.py": "",
                     "meters/jobs.py": SQLALCHEMY_SYNC.replace("{lock}", lock).replace("{moved}", moved)})
    assert findings(tmp_path, "meters/jobs.py", codes=("OG301",)) == expected


NORMALISED = """
    from .client import canonical_title
    from .models import Entry


    def tidy(entry_id):
        entry = Entry.objects.get(pk=entry_id)
        entry.title = canonical_title(entry.title)
        entry.save(update_fields=["title"])
    """


def test_a_field_replaced_by_what_a_call_makes_of_it_with_nothing_copied_in_is_left_alone(tmp_path):
    write(tmp_path, {"reader/__init__.py": "", "reader/models.py": DJANGO_MODELS, "reader/tidy.py": NORMALISED,
                     "reader/client.py": "def canonical_title(text):\n    return text.strip().title()\n"})
    assert findings(tmp_path, "reader/tidy.py", codes=("OG301",)) == []


RECIPIENTS = """
    from .models import Invite, Member


    def split_recipients(invite_id):
        invite = Invite.objects.get(pk=invite_id)
        parts = sorted({part.strip() for part in (invite.to or "").split(",") if part.strip()})
        for part in parts:
            member = Member.objects.filter(email__iexact=part).first()
            if member:
                invite.members.add(member)
        invite.to = ",".join(parts)
        invite.save()
    """

LOOKED_UP = """
    from sqlalchemy import select
    from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column


    class Base(DeclarativeBase):
        pass


    class Folder(Base):
        __tablename__ = "folders"
        id: Mapped[int] = mapped_column(primary_key=True)
        notes: Mapped[int] = mapped_column(default=0)


    class Note(Base):
        __tablename__ = "notes"
        id: Mapped[int] = mapped_column(primary_key=True)
        folder_id: Mapped[int]


    async def refile(session, note_id):
        note = await session.get(Note, note_id)
        folder = await session.scalar(select(Folder).filter_by(id=note.folder_id))
        if folder is None:
            return
        session.add(folder)
        note.folder_id = folder.id
        await session.commit()


    async def refile_job(ctx, note_id):
        await refile(ctx["session"], note_id)


    class WorkerSettings:
        functions = [refile_job]
    """


MAIL_MODELS = """
    from django.db import models


    class Member(models.Model):
        email = models.EmailField()


    class Invite(models.Model):
        to = models.TextField(blank=True, default="")
        members = models.ManyToManyField(Member)
    """

TASK = """
    from celery import shared_task

    from .work import {name}


    @shared_task
    def run(pk):
        {name}(pk)
    """


def test_a_field_taken_apart_is_no_position_moved_past_a_fetch(tmp_path):
    # (the field is parsed in this process: nothing comes "after" it to be copied twice)
    write(tmp_path, {"mail/__init__.py": "", "mail/models.py": MAIL_MODELS, "mail/work.py": RECIPIENTS,
                     "mail/tasks.py": TASK.replace("{name}", "split_recipients")})
    assert findings(tmp_path, "mail/work.py", codes=("OG301",)) == []


def test_one_record_looked_up_by_the_field_and_added_back_is_no_batch_copied_twice(tmp_path):
    # (the id names one record, added back as it is: no items after a position are copied in)
    write(tmp_path, {"notes/__init__.py": "", "notes/refile.py": LOOKED_UP})
    assert findings(tmp_path, "notes/refile.py", codes=("OG301",)) == []
