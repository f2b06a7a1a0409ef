"""Tricky cases for OG301/OG302 (data races) and OG501/OG502 (Redis leases) that the rule docs do not show."""
from __future__ import annotations

import textwrap

import pytest

from onceguard.engine.check import passes_prefilter

from onceguard import docs
from onceguard.config import Config
from onceguard.engine.check import check_source
from onceguard.rules.registry import rule_classes

CODES = ("OG301", "OG302", "OG501", "OG502")


def found(source: str, path: str = "app/service.py"):
    source = textwrap.dedent(source)
    return [d for d in check_source(source.encode(), path, Config()) if d.code in CODES]


def codes(source: str, path: str = "app/service.py"):
    return sorted((d.line, d.code) for d in found(source, path))


# -- OG501 / OG502 ------------------------------------------------------------------------------------


def test_unknown_client_origin_is_silent():
    assert codes("""
        def job(r):
            if not r.set("lock:job", 1, nx=True):
                return
            r.delete("lock:job")
    """) == []


def test_annotated_parameter_is_a_client():
    assert codes("""
        from redis import Redis

        def job(r: Redis):
            if not r.set("lock:job", 1, nx=True):
                return
            r.delete("lock:job")
    """) == [(5, "OG501"), (7, "OG502")]


def test_run_once_marker_without_expiry_is_not_a_lock():
    assert codes("""
        import redis
        r = redis.Redis()

        def send_welcome(user_id):
            if r.set(f"welcome:{user_id}", 1, nx=True):
                deliver(user_id)
            if r.setnx(f"audit:{user_id}", 1):
                audit(user_id)
    """) == []


def test_setnx_then_expire_guarding_work_is_a_lease_whatever_its_name():
    assert codes("""
        import redis
        r = redis.Redis()

        def export():
            if not r.setnx("exports", 1):
                return
            r.expire("exports", 60)
            run_export()
    """) == [(6, "OG501")]


def test_set_xx_and_spread_kwargs_are_left_alone():
    assert codes("""
        import redis
        r = redis.Redis()

        def renew(token, **options):
            r.set("lock:job", token, xx=True)
            r.set("lock:job", token, **options)
    """) == []


def test_django_cache_add_default_timeout_expires():
    assert codes("""
        from django.core.cache import cache

        def close():
            if not cache.add("close_lock", 1):
                return
            do_close()
    """) == []


def test_django_caches_alias_and_explicit_none_timeout():
    assert codes("""
        from django.core.cache import caches

        def close():
            locks = caches["locks"]
            if not locks.add("close_lock", 1, timeout=None):
                return
            do_close()
    """) == [(6, "OG501")]


def test_release_in_another_method_of_the_class():
    assert codes("""
        import secrets
        import redis

        class Mutex:
            def __init__(self, name):
                self.client = redis.Redis()
                self.key = f"mutex:{name}"
                self.token = secrets.token_hex(8)

            def acquire(self):
                return self.client.set(self.key, self.token, nx=True, px=5000)

            def release(self):
                self.client.delete(self.key)
    """) == [(15, "OG502")]


def test_release_of_module_constant_in_another_function():
    assert codes("""
        import redis
        r = redis.Redis()
        KEY = "rebuild"

        def acquire(token):
            return r.set(KEY, token, nx=True, ex=30)

        def release():
            r.unlink(KEY)
    """) == [(10, "OG502")]


def test_get_then_delete_is_reported_as_two_round_trips():
    # Awaited GET then DEL: other tasks run between the two round trips.  The same compare in sync code is
    # clean (its window is one round trip): tests/test_redis_leases.py.
    [finding] = found("""
        import redis.asyncio as aioredis
        r = aioredis.Redis()

        async def release(token):
            if await r.get("lock:x") == token:
                await r.delete("lock:x")
    """)
    assert finding.code == "OG502"
    assert "separate awaited GET" in finding.message
    assert "Lua" in finding.suggestion and "fencing" in finding.suggestion


def test_plain_set_without_lock_evidence_is_a_cache_write():
    assert codes("""
        import redis
        r = redis.Redis()

        def cached(key, load):
            if r.exists(key):
                return r.get(key)
            value = load()
            r.set(key, value)
            return value

        def drop(key):
            r.delete(key)
    """) == []


def test_plain_set_checked_then_deleted_is_a_lock():
    assert codes("""
        import redis
        r = redis.Redis()

        def refresh():
            if r.get("rebuild"):
                return
            r.set("rebuild", 1, ex=60)
            try:
                rebuild()
            finally:
                r.delete("rebuild")
    """) == [(8, "OG501"), (12, "OG502")]


def test_redis_lock_with_positional_timeout_is_clean():
    assert codes("""
        import redis
        r = redis.Redis()

        def job():
            with r.lock("job", 30):
                work()
    """) == []


# -- OG301 ---------------------------------------------------------------------------------------------


def test_instance_from_a_parameter_is_a_row_once_it_is_saved():
    # The save is what proves it is a row: where the instance came from does not matter.
    assert codes("""
        def bump(profile):
            profile.visits += 1
            profile.save()
    """) == [(3, "OG301")]


def test_instance_changed_but_never_written_is_silent():
    assert codes("""
        def bump(profile):
            profile.visits += 1
            return profile.visits
    """) == []


def test_django_select_for_update_counts_as_locked_even_without_visible_atomic():
    # Evaluated outside atomic() it raises; inside (ATOMIC_REQUESTS, a caller) it locks.
    assert codes("""
        from .models import Seat

        def book(seat_id):
            seat = Seat.objects.select_for_update().get(pk=seat_id)
            seat.taken += 1
            seat.save()
    """) == []


def test_django_suggestion_names_the_model_field_and_limit():
    [finding] = found("""
        from .models import Seat

        def book(seat_id, n):
            seat = Seat.objects.filter(pk=seat_id).first()
            seat.taken += n
            seat.save()
    """)
    assert finding.line == 6
    assert 'Seat.objects.filter(pk=seat.pk).update(taken=F("taken") + n)' in finding.suggestion
    assert "taken__lt=limit" in finding.suggestion


def test_save_before_the_change_is_not_a_write_back():
    assert codes("""
        from .models import Seat

        def book(seat_id):
            seat = Seat.objects.get(pk=seat_id)
            seat.save()
            seat.taken += 1
            return seat
    """) == []


def test_dict_get_is_not_a_session_get():
    assert codes("""
        def tweak(registry, session):
            item = registry.get(Item, 3)
            item.count += 1
            session.commit()
    """) == []


def test_sqlalchemy_commit_on_another_session_is_not_the_write():
    assert codes("""
        from sqlalchemy.orm import Session

        def bump(a: Session, b: Session, pk):
            row = a.get(Counter, pk)
            row.n += 1
            b.commit()
    """) == []


def test_flask_sqlalchemy_model_query():
    assert codes("""
        from flask_sqlalchemy import SQLAlchemy
        from .models import Post

        db = SQLAlchemy()

        def like(post_id):
            post = Post.query.filter_by(id=post_id).first()
            post.likes += 1
            db.session.commit()
    """) == [(9, "OG301")]


def test_raw_sql_named_parameters_through_sqlalchemy_text():
    assert codes("""
        from sqlalchemy import text
        from sqlalchemy.orm import Session

        def bump(session: Session, pk):
            row = session.execute(text("SELECT n FROM counters WHERE id = :id"), {"id": pk}).one()
            session.execute(text("UPDATE counters SET n = :n WHERE id = :id"), {"n": row.n + 1, "id": pk})
            session.commit()
    """) == [(7, "OG301")]


def test_raw_sql_value_from_another_table_or_not_computed_is_clean():
    assert codes("""
        import psycopg

        def copy_price(conn: psycopg.Connection, pid):
            cur = conn.execute("SELECT price FROM price_list WHERE product_id = %s", (pid,))
            (price,) = cur.fetchone()
            conn.execute("UPDATE products SET price = %s WHERE id = %s", (price * 2, pid))

        def overwrite(conn: psycopg.Connection, pid, name):
            cur = conn.execute("SELECT name FROM products WHERE id = %s", (pid,))
            (old,) = cur.fetchone()
            conn.execute("UPDATE products SET name = %s WHERE id = %s", (name, pid))
    """) == []


def test_redis_write_to_another_key_or_of_an_unrelated_value_is_clean():
    assert codes("""
        import redis
        r = redis.Redis()

        def roll(day):
            today = int(r.get(f"views:{day}") or 0)
            r.set("views:yesterday", today + 0)
            r.set(f"views:{day}", 0)
    """) == []


def test_redis_setex_counts_as_a_write():
    [finding] = found("""
        import redis
        r = redis.Redis()

        def hit(ip):
            n = int(r.get(f"rate:{ip}") or 0)
            r.setex(f"rate:{ip}", 60, n + 1)
    """)
    assert finding.code == "OG301" and "INCRBY" in finding.suggestion


# -- OG302 ---------------------------------------------------------------------------------------------


def test_conditional_transition_without_checking_the_count_still_races():
    assert codes("""
        from .models import Job

        def work():
            for job in Job.objects.filter(status="pending"):
                Job.objects.filter(pk=job.pk, status="pending").update(status="running")
                run(job)
                job.status = "done"
                job.save()
    """) == [(5, "OG302")]


def test_select_for_update_without_skip_locked_is_a_claim():
    assert codes("""
        from django.db import transaction
        from .models import Job

        def work():
            with transaction.atomic():
                for job in Job.objects.select_for_update().filter(status="pending")[:10]:
                    job.status = "done"
                    job.save()
    """) == []


def test_queryset_scoped_to_a_caller_entity_is_not_a_queue():
    assert codes("""
        from .models import Job

        def cancel(user):
            for job in Job.objects.filter(owner=user, status="pending"):
                job.delete()
    """) == []


def test_sql_scoped_to_a_parameter_is_not_a_queue():
    assert codes("""
        import psycopg

        def cancel(conn: psycopg.Connection, user_id):
            cur = conn.execute("SELECT id FROM jobs WHERE user_id = %s AND status = 'pending'", (user_id,))
            for (job_id,) in cur.fetchall():
                conn.execute("UPDATE jobs SET status = 'cancelled' WHERE id = %s", (job_id,))
    """) == []


def test_sql_conditional_update_without_rowcount_is_reported():
    assert codes("""
        import psycopg

        def work(conn: psycopg.Connection):
            cur = conn.cursor()
            cur.execute("SELECT id FROM jobs WHERE status = 'pending' LIMIT 5")
            for (job_id,) in cur.fetchall():
                conn.execute("UPDATE jobs SET status = 'running' WHERE id = %s AND status = 'pending'", (job_id,))
                run(job_id)
    """) == [(6, "OG302")]


def test_sql_update_of_another_table_is_not_a_pickup():
    assert codes("""
        import psycopg

        def work(conn: psycopg.Connection):
            cur = conn.cursor()
            cur.execute("SELECT id FROM jobs WHERE status = 'pending' LIMIT 5")
            for (job_id,) in cur.fetchall():
                cur.execute("UPDATE stats SET seen = seen + 1 WHERE job_id = %s", (job_id,))
    """) == []


def test_sqlalchemy_legacy_query_delete():
    assert codes("""
        from sqlalchemy.orm import Session

        def purge(session: Session):
            for token in session.query(Token).filter(Token.state == "expired").all():
                notify(token)
                session.delete(token)
            session.commit()
    """) == [(5, "OG302")]


def test_sqlalchemy_suggestion_names_both_claims():
    [finding] = found("""
        from sqlalchemy import select
        from sqlalchemy.orm import Session

        def work(session: Session):
            for job in session.scalars(select(Job).where(Job.status == "queued")):
                run(job)
                job.status = "done"
            session.commit()
    """)
    assert "with_for_update(skip_locked=True)" in finding.suggestion
    assert "Job.status ==" in finding.suggestion and "rowcount" in finding.suggestion


# -- shared ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("code", CODES)
def test_every_flagged_doc_example_contains_a_trigger(code):
    rule = next(cls for cls in rule_classes() if cls.code == code)
    for example in docs.examples(code):
        if example.kind == "flagged" and any(c == code for _, c in example.expected):
            assert passes_prefilter(example.source.encode(), rule.triggers), example.source


def test_messages_state_the_hazard_and_suggestions_name_the_guard():
    findings = found("""
        import redis
        from .models import Seat

        r = redis.Redis()

        def book(seat_id):
            seat = Seat.objects.get(pk=seat_id)
            seat.taken += 1
            seat.save()

        def job():
            if not r.setnx("lock:job", 1):
                return
            r.expire("lock:job", 10)
            try:
                work()
            finally:
                r.delete("lock:job")
    """)
    assert sorted(d.code for d in findings) == ["OG301", "OG501", "OG502"]
    for finding in findings:
        assert finding.message and finding.suggestion and finding.message != finding.suggestion
    by_code = {d.code: d for d in findings}
    assert "lost" in by_code["OG301"].message and 'F("taken")' in by_code["OG301"].suggestion
    assert "never expires" in by_code["OG501"].message and "nx=True, px=" in by_code["OG501"].suggestion
    assert "other replica's lock" in by_code["OG502"].message


def test_tests_and_data_migrations_are_exempt():
    source = """
        from .models import Job

        def forwards(apps, schema_editor):
            for job in Job.objects.filter(status="legacy"):
                notify(job)
                job.status = "pending"
                job.save()
    """
    assert codes(source, "app/migrations/0007_backfill.py") == []
    assert codes(source, "tests/test_jobs.py") == []
    assert codes(source, "app/jobs.py") == [(5, "OG302")]


def test_unannotated_parameter_shadows_the_module_client():
    assert codes("""
        import redis
        r = redis.Redis()

        def release(r):
            r.delete("lock:job")
    """) == []


def test_account_lockout_flag_is_not_a_lock():
    assert codes("""
        import redis
        r = redis.Redis()

        def lock_out(user_id):
            r.set(f"locked:{user_id}", 1, ex=900)

        def unlock(user_id):
            r.delete(f"locked:{user_id}")
    """) == []


_WRAPPED_CACHE = """
    import redis


    class TwoLevelCache:
        def __init__(self) -> None:
            self.remote = redis.Redis()

        def get_cache(self, key, local_only=False):
            return self.remote.get(key)

        def set_cache(self, key, value, ttl=None, local_only=False):
            return self.remote.set(key, value, ex=ttl)

        def delete_cache(self, key):
            return self.remote.delete(key)
"""


def test_wrapped_cache_entry_counted_in_place_is_a_lost_update():
    source = _WRAPPED_CACHE + """
    def record(cache: TwoLevelCache, bucket: str, who: str) -> None:
        seen = cache.get_cache(key=bucket) or {}
        seen[who] += 1
        cache.set_cache(key=bucket, value=seen, ttl=60)
    """
    write_line = textwrap.dedent(source).splitlines().index("    cache.set_cache(key=bucket, value=seen, ttl=60)") + 1
    [finding] = [d for d in found(source) if d.code == "OG301"]
    assert finding.line == write_line
    assert "HINCRBY" in finding.suggestion


def test_wrapped_cache_lookalikes_stay_clean():
    # Another key, a local-only copy, an untyped receiver, and a value replaced rather than changed.
    assert codes(_WRAPPED_CACHE + """
    def other_key(cache: TwoLevelCache, who: str) -> None:
        seen = cache.get_cache(key="a") or {}
        seen[who] = seen.get(who, 0) + 1
        cache.set_cache(key="b", value=seen)

    def local(cache: TwoLevelCache, who: str) -> None:
        seen = cache.get_cache(key="a", local_only=True) or {}
        seen[who] = seen.get(who, 0) + 1
        cache.set_cache(key="a", value=seen, local_only=True)

    def unknown(cache, who: str) -> None:
        seen = cache.get_cache(key="a") or {}
        seen[who] = seen.get(who, 0) + 1
        cache.set_cache(key="a", value=seen)

    def replaced(cache: TwoLevelCache, who: str) -> None:
        seen = cache.get_cache(key="a") or {}
        seen = {who: len(who) + 1}
        cache.set_cache(key="a", value=seen)
    """) == []


_REJECTS = """\
    import psycopg


    def mark_rejects(dsn: str, rejects: list) -> None:
        with psycopg.connect(dsn) as conn:
            last = conn.execute("SELECT {picked} FROM parcels WHERE returned_at IS NOT NULL").fetchone()
            for parcel_id in rejects:
                conn.execute("UPDATE parcels SET returned_at = now() WHERE id = %s", (parcel_id,))
            print(last)
"""


@pytest.mark.parametrize("picked, reported", [
    ("max(batch_no)", False),  # one number summarising the rows: nothing picked to work on
    ("count(*), min(batch_no)", False),
    ("id, batch_no", True),
])
def test_a_select_of_aggregates_picks_no_rows(picked, reported):
    source = textwrap.dedent(_REJECTS.format(picked=picked))
    found = [d.code for d in check_source(source.encode(), "app/returns.py", Config()) if d.code == "OG302"]
    assert found == (["OG302"] if reported else [])
