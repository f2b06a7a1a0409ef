"""A removal repeated removes nothing more: a scheduled job whose only work is deleting (Django's
``QuerySet._raw_delete(using)``, ``blob.delete()`` on each expired row, a cache key's ``delete``) is an idempotent
sweep (OG204, off by default), not a job whose runs add up (OG201) -- even when the project has some other def
named ``delete`` that a search by name would find."""
from __future__ import annotations

import pytest

from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

MODELS = """\
    from django.db import models


    class Upload(models.Model):
        created = models.DateTimeField()
        blob = models.FileField()
"""

TASKS = """\
    from datetime import timedelta

    from celery import shared_task
    from django.utils.timezone import now

    from vault.models import Upload


    @shared_task
    def purge_uploads():
        cutoff = now() - timedelta(days=30)
        {work}
"""

VIEWS = """\
    from rest_framework.views import APIView

    from vault.billing import close_account


    class AccountView(APIView):
        def delete(self, request):
            close_account(request.user)
"""

BILLING = """\
    import stripe


    def close_account(user):
        stripe.Customer.create(email=user.email)
"""

SETTINGS = """\
    CELERY_BEAT_SCHEDULE = {"purge": {"task": "vault.tasks.purge_uploads", "schedule": 3600.0}}
"""

ENTRY = """\
    web: gunicorn vault.wsgi
    worker: celery -A vault worker -B
"""

WORKS = {
    "raw": "old = Upload.objects.filter(created__lt=cutoff)\n        old._raw_delete(old.db)",
    "each": "for upload in Upload.objects.filter(created__lt=cutoff):\n            upload.blob.delete()\n"
            "            upload.delete()",
    "mail": "for upload in Upload.objects.filter(created__lt=cutoff):\n            stripe_note(upload)",
}


@pytest.mark.parametrize("work, codes", [("raw", []), ("each", []), ("mail", [(1, "OG201")])])
def test_a_job_that_only_removes(tmp_path, work, codes):
    tasks = TASKS.format(work=WORKS[work])
    if work == "mail":
        alias = "    from vault.billing import close_account as stripe_note\n"
        tasks = tasks.replace("    from vault.models import Upload", alias + "    from vault.models import Upload")
    write(tmp_path, {"pyproject.toml": "[project]\nname = 'vault'\n", "vault/__init__.py": "",
                     "vault/models.py": MODELS, "vault/tasks.py": tasks, "vault/views.py": VIEWS,
                     "vault/billing.py": BILLING, "vault/settings.py": SETTINGS, "Procfile": ENTRY})
    assert [code for _, code in findings(tmp_path, "vault/settings.py")] == [code for _, code in codes]
