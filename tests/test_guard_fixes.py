"""The linter and onceguard.guards: the guards count as claims with no configuration, and the fixes
write them in."""
from __future__ import annotations

import pytest

from onceguard.config import from_mapping
from onceguard.engine.check import check_source


def _codes(source: str, tmp_path, name: str = "jobs.py") -> set:
    path = tmp_path / name
    path.write_text(source)
    found = check_source(source.encode(), str(path), from_mapping({}, root=str(tmp_path), where="test"))
    return {(d.line, d.code) for d in found}


_UNGUARDED = """
from apscheduler.schedulers.background import BackgroundScheduler
{imports}

scheduler = BackgroundScheduler()


@scheduler.scheduled_job("interval", minutes=5)
{async_}def send_reminders():
{guard}
    for user in due_users():
        mailer.send(user.email, "reminder")
"""


@pytest.mark.parametrize("imports, async_, guard", [
    ("from onceguard.guards import claim_period", "",
     '    if not claim_period("jobs.send_reminders", 300):\n        return'),
    ("from onceguard import guards", "",
     '    if not guards.claim_period("jobs.send_reminders", 300):\n        return'),
    ("import onceguard.guards", "",
     '    if not onceguard.guards.claim_once("jobs.send_reminders", 300):\n        return'),
    ("from onceguard.guards import aclaim_period", "async ",
     '    if not await aclaim_period("jobs.send_reminders", 300):\n        return'),
    ("from onceguard.guards import arun_once as once", "async ",
     '    if not await once("jobs.send_reminders", 300, work):\n        return'),
    ("from onceguard.guards import arun_exclusive", "async ",
     '    await arun_exclusive("jobs.send_reminders", 60, work)\n    return'),
])
def test_a_job_that_begins_with_a_guard_is_clean(tmp_path, imports, async_, guard):
    source = _UNGUARDED.format(imports=imports, async_=async_, guard=guard)
    assert _codes(source, tmp_path) == set()


def test_the_same_job_without_a_guard_is_flagged(tmp_path):
    source = _UNGUARDED.format(imports="", async_="", guard="    pass")
    assert _codes(source, tmp_path) == {(9, "OG201")}


def test_a_guard_that_is_not_first_does_not_count(tmp_path):
    source = _UNGUARDED.format(
        imports="from onceguard.guards import claim_period", async_="",
        guard='    mailer.send("ops@example.com", "starting")\n    if not claim_period("jobs.x", 300):\n        return')
    assert _codes(source, tmp_path) == {(9, "OG201")}


# ---------------------------------------------------------------------------------------------------------
# OG201: the period read from the trigger, and the fix that writes the claim

@pytest.mark.parametrize("registration, period", [
    ('scheduler.add_job(job, "interval", minutes=5)', 300),
    ('scheduler.add_job(job, "interval", hours=1, minutes=30)', 5400),
    ('scheduler.add_job(job, IntervalTrigger(seconds=45))', 45),
    ('scheduler.add_job(job, "cron", hour=3)', 86400),
    ('scheduler.add_job(job, "cron", minute=0)', 3600),
    ('scheduler.add_job(job, "cron", minute="*/15")', 900),
    ('scheduler.add_job(job, "cron", minute="*/7")', 60),
    ('scheduler.add_job(job, "cron", hour="*/6", minute=0)', 21600),
    ('scheduler.add_job(job, "cron", day_of_week="mon-fri", hour=7, minute=30)', 86400),
    ('scheduler.add_job(job, "cron", minute="0,30")', 60),
    ('scheduler.add_job(job, CronTrigger.from_crontab("0 3 * * *"))', 86400),
    ('scheduler.add_job(job, CronTrigger.from_crontab("* 3 * * *"))', 60),
    ('scheduler.add_job(job, CronTrigger.from_crontab("*/10 * * * *"))', 600),
    ('scheduler.add_job(job, "interval", minutes=every)', None),
    ('scheduler.add_job(job, "interval", **options)', None),
    ('scheduler.add_job(job, "interval", seconds=0.5)', None),
])
def test_period_from_an_apscheduler_trigger(registration, period):
    import ast

    from onceguard.rules.fix_plans import trigger_period

    call = ast.parse(registration).body[0].value
    assert trigger_period(call.args[1] if len(call.args) > 1 else None, call, apscheduler=True) == period


@pytest.mark.parametrize("expression, period", [
    ("schedule.every(10).minutes.do(job)", 600),
    ("schedule.every().hour.do(job)", 3600),
    ('schedule.every().day.at("10:30").do(job)', 86400),
    ("schedule.every().monday.do(job)", 604800),
    ("schedule.every(5).to(10).minutes.do(job)", None),
    ("schedule.repeat(schedule.every(17).minutes)", 1020),
    ("schedule.repeat(schedule.every(22).to(25).hours)", None),
    ("settings.minutes", None),
    ('crontab(minute="*/5")', 300),
    ('crontab(minute=0, hour=4)', 86400),
    ('crontab(hour=4)', 60),  # crontab: the minutes left out mean every minute of that hour
    ("crontab()", 60),
    ("cron(job, minute={0, 30})", 60),
    ('"every 10 seconds"', 10),
    ('"daily between 10:00 and 12:00"', 86400),
    ('"*/5 * * * *"', 300),
    ("300.0", 300),
    ("timedelta(hours=2)", 7200),
])
def test_period_from_other_schedulers(expression, period):
    import ast

    from onceguard.rules.fix_plans import trigger_period

    node = ast.parse(expression).body[0].value
    assert trigger_period(node, None, apscheduler=False) == period


def _fix(source: str, tmp_path, name: str = "jobs.py") -> tuple:
    from onceguard.engine.fixes import fix_source

    path = tmp_path / name
    path.write_text(source)
    config = from_mapping({}, root=str(tmp_path), where="test")
    found = check_source(source.encode(), str(path), config)
    result = fix_source(source.encode(), found, unsafe=True)
    return found, result.new_source.decode()


def test_og201_fix_is_unsafe_and_needs_the_flag(tmp_path):
    from onceguard.engine.fixes import fix_source

    source = _UNGUARDED.format(imports="", async_="", guard="    pass")
    found, _ = _fix(source, tmp_path)
    (finding,) = found
    assert finding.fix is not None and finding.fix.applicability == "unsafe"
    assert 'claim_period("jobs.send_reminders", 300)' in finding.fix.description
    assert fix_source(source.encode(), found, unsafe=False).new_source == source.encode()


def test_og201_fix_on_a_one_line_job_and_a_second_fix_changes_nothing(tmp_path):
    source = ('import schedule\n\n\ndef purge(): store.purge_expired(); audit.log("purged")\n\n\n'
              'schedule.every(10).minutes.do(purge)\n')
    found, fixed = _fix(source, tmp_path)
    assert [d.code for d in found] == ["OG201"]
    assert fixed == ('import schedule\nfrom onceguard.guards import claim_period\n\n\ndef purge():\n'
                     '    if not claim_period("jobs.purge", 600):\n        return\n'
                     '    store.purge_expired(); audit.log("purged")\n\n\nschedule.every(10).minutes.do(purge)\n')
    again, unchanged = _fix(fixed, tmp_path)
    assert again == [] and unchanged == fixed


def test_og201_fix_keeps_an_existing_import_and_the_file_layout(tmp_path):
    source = ('from onceguard.guards import claim_period\r\nfrom apscheduler.schedulers.background import '
              'BackgroundScheduler\r\n\r\nscheduler = BackgroundScheduler()\r\n\r\n\r\n'
              '@scheduler.scheduled_job("interval", seconds=30)\r\ndef poll():\r\n\tqueue.push(fetch())\r\n')
    found, fixed = _fix(source, tmp_path)
    assert [d.code for d in found] == ["OG201"]
    assert fixed.count("import claim_period") == 1
    assert '\tif not claim_period("jobs.poll", 30):\r\n\t\treturn\r\n\tqueue.push(fetch())\r\n' in fixed


def test_og201_without_a_visible_period_is_display_only(tmp_path, onceguard):
    source = ('from apscheduler.schedulers.background import BackgroundScheduler\n\n'
              'scheduler = BackgroundScheduler()\n\n\ndef sync():\n    crm.push(changes())\n\n\n'
              'scheduler.add_job(sync, "interval", minutes=settings.SYNC_MINUTES)\n')
    found, fixed = _fix(source, tmp_path)
    (finding,) = found
    assert finding.fix.applicability == "display-only"
    assert 'claim_period("jobs.sync", PERIOD_SECONDS)' in finding.fix.description
    assert fixed == source
    result = onceguard("check", str(tmp_path / "jobs.py"), "--no-cache", "--fix", "--unsafe-fixes")
    assert "to apply by hand" in result.stdout
    assert (tmp_path / "jobs.py").read_text() == source


def test_og201_no_fix_for_a_ticker_loop(tmp_path):
    source = ('import asyncio\n\nfrom fastapi import FastAPI\n\napp = FastAPI()\n\n\n'
              'async def ticker():\n    while True:\n        await mailer.send_digest()\n'
              '        await asyncio.sleep(60)\n\n\n@app.on_event("startup")\nasync def start():\n'
              '    asyncio.create_task(ticker())\n')
    found, fixed = _fix(source, tmp_path)
    assert [d.code for d in found] == ["OG201"]
    assert found[0].fix is None  # a claim before the loop would stop the ticker for good
    assert fixed == source


# ---------------------------------------------------------------------------------------------------------
# OG103 / OG106: the try variant, the result read and an early return

_ASYNC_SQLALCHEMY = '''from sqlalchemy import text
from sqlalchemy.ext.asyncio import create_async_engine

engine = create_async_engine("postgresql+asyncpg://app@db/app")


async def roll_up() -> None:
    async with engine.begin() as conn:
        await conn.execute(text("SELECT {function}(42)"))
        await conn.execute(text("INSERT INTO rollups SELECT * FROM staging"))
'''


@pytest.mark.parametrize("function, code", [("pg_try_advisory_xact_lock", "OG106"),
                                            ("pg_advisory_xact_lock", "OG103")])
def test_awaited_sqlalchemy_result_is_parenthesised(tmp_path, function, code):
    found, fixed = _fix(_ASYNC_SQLALCHEMY.format(function=function), tmp_path)
    assert [d.code for d in found] == [code]
    assert ('        if not (await conn.execute(text("SELECT pg_try_advisory_xact_lock(42)"))).scalar():\n'
            '            return\n') in fixed
    again, unchanged = _fix(fixed, tmp_path)
    assert again == [] and unchanged == fixed


def test_psycopg3_connection_reads_fetchone(tmp_path):
    source = ('import psycopg\n\n\ndef purge(dsn: str) -> None:\n    with psycopg.connect(dsn) as conn:\n'
              '        conn.execute("SELECT pg_try_advisory_xact_lock(9)")\n'
              '        conn.execute("DELETE FROM sessions WHERE expires_at < now()")\n')
    found, fixed = _fix(source, tmp_path)
    assert [d.code for d in found] == ["OG106"]
    assert '        if not conn.execute("SELECT pg_try_advisory_xact_lock(9)").fetchone()[0]:\n            return\n' \
        in fixed


def test_no_fix_outside_a_function_or_when_the_sql_is_elsewhere(tmp_path):
    module_level = ('import psycopg\n\nconn = psycopg.connect("dbname=app")\n'
                    'conn.execute("SELECT pg_try_advisory_lock(9)")\nconn.execute("DELETE FROM sessions")\n')
    found, fixed = _fix(module_level, tmp_path)
    assert [d.code for d in found] == ["OG106"] and found[0].fix is None and fixed == module_level

    elsewhere = ('from sqlalchemy import create_engine, text\n\nengine = create_engine("postgresql://app@db/app")\n'
                 'LOCK = text("SELECT pg_advisory_xact_lock(7)")\n\n\ndef job() -> None:\n'
                 '    with engine.begin() as conn:\n        conn.execute(LOCK)\n'
                 '        conn.execute(text("DELETE FROM sessions"))\n')
    found, fixed = _fix(elsewhere, tmp_path)
    assert [d.code for d in found] == ["OG103"]
    assert found[0].fix is None  # the SQL text is not in the statement: nothing to turn into the try variant
    assert fixed == elsewhere


def test_the_readme_guards_section_shows_what_the_fix_writes(tmp_path):
    import re
    from pathlib import Path

    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
    section = readme.split("\n## Guards\n", 1)[1].split("\n## ", 1)[0]
    before = re.search(r"Before:\n\n```python\n(.*?)```", section, re.DOTALL).group(1)
    after = re.search(r"After:\n\n```python\n(.*?)```", section, re.DOTALL).group(1)
    found, fixed = _fix(before, tmp_path)
    assert [d.code for d in found] == ["OG201"]
    assert fixed == after


# ---------------------------------------------------------------------------------------------------------
# OG501: SETNX + EXPIRE → one SET; a lock object gets a TTL

def test_setnx_then_pexpire_becomes_one_set_with_px(tmp_path):
    source = ('import redis.asyncio as redis\n\nr = redis.Redis.from_url("redis://cache:6379/0")\n\n\n'
              'async def warm_cache():\n    if await r.setnx("lock:warm", "1"):\n'
              '        await r.pexpire("lock:warm", 30_000)\n        await cache.warm()\n')
    found, fixed = _fix(source, tmp_path)
    assert [d.code for d in found] == ["OG501"]
    assert '    if await r.set("lock:warm", "1", nx=True, px=30000):\n' in fixed
    again, unchanged = _fix(fixed, tmp_path)
    assert [d.code for d in again] == [] and unchanged == fixed


def test_lock_without_timeout_gets_one_and_keeps_its_layout(tmp_path):
    source = ('import redis\n\nr = redis.Redis()\n\n\ndef rotate_keys():\n    with r.lock(\n'
              '        "lock:rotate",\n        blocking_timeout=0,\n    ):\n        keys.rotate()\n')
    found, fixed = _fix(source, tmp_path)
    assert [d.code for d in found] == ["OG501"]
    assert found[0].fix.applicability == "unsafe"
    assert '        blocking_timeout=0,\n        timeout=60,\n    ):' in fixed


# ---------------------------------------------------------------------------------------------------------
# OG301: the database does the arithmetic

_DJANGO_VOTE = '''from .models import Answer


def upvote(answer_id: int, voter) -> int:
    answer = Answer.objects.get(pk=answer_id)
    answer.score += 1
{between}    answer.save()
    return {returned}
'''


def test_django_save_becomes_refresh_when_the_field_is_read_after(tmp_path):
    (tmp_path / "qa").mkdir()
    source = _DJANGO_VOTE.format(between="", returned="answer.score")
    found, fixed = _fix(source, tmp_path, "qa/views.py")
    assert [d.code for d in found] == ["OG301"]
    assert fixed == ('from django.db.models import F\n\nfrom .models import Answer\n\n\n'
                     'def upvote(answer_id: int, voter) -> int:\n    answer = Answer.objects.get(pk=answer_id)\n'
                     '    Answer.objects.filter(pk=answer.pk).update(score=F("score") + 1)\n'
                     '    answer.refresh_from_db(fields=["score"])\n    return answer.score\n')


def test_django_no_fix_when_the_save_also_writes_another_change(tmp_path):
    (tmp_path / "qa").mkdir()
    source = _DJANGO_VOTE.format(between="    answer.last_voter = voter\n", returned="0")
    found, fixed = _fix(source, tmp_path, "qa/views.py")
    assert [d.code for d in found] == ["OG301"]
    assert found[0].fix is None and fixed == source


def test_sqlalchemy_async_session_update_is_awaited(tmp_path):
    source = ('from sqlalchemy.ext.asyncio import AsyncSession\n\nfrom .models import Wallet\n\n\n'
              'async def top_up(session: AsyncSession, wallet_id: int, cents: int) -> None:\n'
              '    wallet = await session.get(Wallet, wallet_id)\n    wallet.cents += cents\n'
              '    await session.commit()\n')
    found, fixed = _fix(source, tmp_path)
    assert [d.code for d in found] == ["OG301"]
    assert ('    await session.execute(update(Wallet).where(Wallet.id == wallet.id)'
            '.values(cents=Wallet.cents + cents))\n    await session.commit()\n') in fixed
    assert fixed.startswith("from sqlalchemy import update\n")
    again, unchanged = _fix(fixed, tmp_path)
    assert [d.code for d in again] == [] and unchanged == fixed


def test_django_instance_from_a_parameter_updates_through_its_own_class(tmp_path):
    source = ('def on_message_read(sender, user, **kwargs):\n    if user.unread_messages:\n'
              '        user.unread_messages -= 1\n        user.save(update_fields=["unread_messages"])\n')
    found, fixed = _fix(source, tmp_path, "signals.py")
    assert [d.code for d in found] == ["OG301"]
    assert fixed == ('from django.db.models import F\n\ndef on_message_read(sender, user, **kwargs):\n'
                     '    if user.unread_messages:\n        type(user).objects.filter(pk=user.pk).update('
                     'unread_messages=F("unread_messages") - 1)\n')


def test_og201_job_defined_in_another_file_gets_a_display_only_claim(tmp_path, onceguard):
    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "__init__.py").write_text("")
    tasks = 'def send_digest():\n    mailer.send("all@example.com", "digest")\n'
    (tmp_path / "app" / "tasks.py").write_text(tasks)
    scheduler = ('from apscheduler.schedulers.background import BackgroundScheduler\n\nfrom .tasks import send_digest\n\n'
                 'scheduler = BackgroundScheduler(timezone="UTC")\nscheduler.add_job(send_digest, "interval", hours=1)\n')
    (tmp_path / "app" / "scheduler.py").write_text(scheduler)
    result = onceguard("check", ".", "--no-cache", "--output-format", "json", cwd=tmp_path)
    import json

    (finding,) = [d for d in json.loads(result.stdout) if d["code"] == "OG201"]
    assert finding["fix"]["applicability"] == "display-only"
    assert 'claim_period("app.tasks.send_digest", 3600)' in finding["fix"]["description"]
    fixed = onceguard("check", ".", "--no-cache", "--fix", "--unsafe-fixes", cwd=tmp_path)
    assert "Traceback" not in fixed.stderr
    assert (tmp_path / "app" / "scheduler.py").read_text() == scheduler
    assert (tmp_path / "app" / "tasks.py").read_text() == tasks  # the claim would go in another file: not written
