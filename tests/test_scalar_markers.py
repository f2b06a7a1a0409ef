"""OG608: a module-level value that remembers the work was done, read to decide whether to do it again.

``_last_sent_day = None`` and a function that declares it ``global``, returns early when it equals today, sends
the day's mail and sets it: each worker process of each replica has its own copy, so every process that
receives the tick sends again.  A value that gates only the process's own upkeep, or work that a claim every
replica agrees on already decides (a ``get_or_create`` on a unique day), is left alone.
"""
from __future__ import annotations

import pytest
from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

DIGEST = """\
    import datetime as dt

    from django.core.mail import send_mail

    from hostels.models import DigestRun

    _last_sent_day = None


    def maybe_send_digest(now: dt.datetime) -> bool:
        global _last_sent_day
        today = now.date()
        if now.hour < 7 or _last_sent_day == today:
            return False
        send_mail("Morning digest", "...", None, ["managers@example.org"])
        _last_sent_day = today
        return True
"""

VIEWS = """\
    import datetime as dt

    from django.http import JsonResponse
    from django.views.decorators.http import require_POST

    from hostels import digest


    @require_POST
    def tick(request):
        return JsonResponse({"sent": digest.maybe_send_digest(dt.datetime.now())})
"""

URLS = """\
    from django.urls import path

    from hostels import views

    urlpatterns = [path("internal/tick", views.tick)]
"""

MODELS = """\
    from django.db import models


    class DigestRun(models.Model):
        day = models.DateField(unique=True)
"""


def _project(tmp_path, digest: str = DIGEST, models: str = MODELS) -> None:
    write(tmp_path, {"hostels/__init__.py": "", "hostels/digest.py": digest, "hostels/views.py": VIEWS,
                     "hostels/urls.py": URLS, "hostels/models.py": models})


def test_a_module_value_gating_mail_from_a_request_is_reported(tmp_path):
    _project(tmp_path)
    assert findings(tmp_path, "hostels/digest.py", codes=("OG608",)) == [(7, "OG608")]


def test_the_value_set_before_the_work_is_the_same_memory(tmp_path):
    before = DIGEST.replace("""        send_mail("Morning digest", "...", None, ["managers@example.org"])
        _last_sent_day = today""", """        _last_sent_day = today
        send_mail("Morning digest", "...", None, ["managers@example.org"])""")
    _project(tmp_path, before)
    assert findings(tmp_path, "hostels/digest.py", codes=("OG608",)) == [(7, "OG608")]


def test_work_a_unique_get_or_create_claims_makes_the_value_a_fast_path(tmp_path):
    claimed = DIGEST.replace("""        send_mail(""", """        _, created = DigestRun.objects.get_or_create(day=today)
        _last_sent_day = today
        if not created:
            return False
        send_mail(""").replace("""        _last_sent_day = today
        return True""", """        return True""")
    _project(tmp_path, claimed)
    assert findings(tmp_path, "hostels/digest.py", codes=("OG608",)) == []


def test_a_get_or_create_on_a_field_that_is_not_unique_is_no_claim(tmp_path):
    claimed = DIGEST.replace("""        send_mail(""", """        _, created = DigestRun.objects.get_or_create(day=today)
        if not created:
            return False
        send_mail(""")
    _project(tmp_path, claimed, models=MODELS.replace("models.DateField(unique=True)", "models.DateField()"))
    assert findings(tmp_path, "hostels/digest.py", codes=("OG608",)) == [(7, "OG608")]


@pytest.mark.parametrize("meta", [
    '        class Meta:\n            unique_together = [("day",)]\n',
    '        class Meta:\n            constraints = [models.UniqueConstraint(fields=["day"], name="one_run_a_day")]\n',
], ids=["unique-together", "unique-constraint"])
def test_uniqueness_declared_in_meta_counts(tmp_path, meta):
    claimed = DIGEST.replace("""        send_mail(""", """        _, created = DigestRun.objects.get_or_create(day=today)
        if not created:
            return False
        send_mail(""")
    models = MODELS.replace("models.DateField(unique=True)", "models.DateField()") + "\n" + meta
    _project(tmp_path, claimed, models=models)
    assert findings(tmp_path, "hostels/digest.py", codes=("OG608",)) == []


def test_a_value_gating_the_process_own_upkeep_is_left_alone(tmp_path):
    upkeep = DIGEST.replace('send_mail("Morning digest", "...", None, ["managers@example.org"])',
                            "_CACHE.clear()").replace("_last_sent_day = None", "_last_sent_day = None\n_CACHE = {}")
    _project(tmp_path, upkeep)
    assert findings(tmp_path, "hostels/digest.py", codes=("OG608",)) == []


def test_a_value_no_request_or_job_reads_is_left_alone(tmp_path):
    write(tmp_path, {"hostels/__init__.py": "", "hostels/digest.py": DIGEST, "hostels/models.py": MODELS})
    assert findings(tmp_path, "hostels/digest.py", codes=("OG608",)) == []


def test_a_value_computed_once_and_handed_back_is_memoisation(tmp_path):
    memo = """\
    import hashlib

    import httpx

    _theme_key = None


    def theme_key() -> str:
        global _theme_key
        if not _theme_key:
            body = httpx.get("https://cdn.example.org/theme.css").content
            _theme_key = hashlib.sha256(body).hexdigest()[:12]
        return _theme_key
"""
    views = VIEWS.replace("digest.maybe_send_digest(dt.datetime.now())", "digest.theme_key()")
    write(tmp_path, {"hostels/__init__.py": "", "hostels/digest.py": memo, "hostels/views.py": views,
                     "hostels/urls.py": URLS})
    assert findings(tmp_path, "hostels/digest.py", codes=("OG608",)) == []


def test_a_flag_set_once_for_the_process_own_set_up_is_left_alone(tmp_path):
    once = """\
    import httpx

    _fonts_registered = False


    def register_fonts() -> None:
        global _fonts_registered
        if _fonts_registered:
            return
        httpx.get("https://fonts.example.org/catalogue")
        _fonts_registered = True
"""
    views = VIEWS.replace("digest.maybe_send_digest(dt.datetime.now())", "digest.register_fonts()")
    write(tmp_path, {"hostels/__init__.py": "", "hostels/digest.py": once, "hostels/views.py": views,
                     "hostels/urls.py": URLS})
    assert findings(tmp_path, "hostels/digest.py", codes=("OG608",)) == []
