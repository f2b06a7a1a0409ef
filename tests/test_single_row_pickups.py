"""A worker loop that takes one row per pass from a project function (``item = take_one()``) and hands that row
to its work (``deliver(item)``): when the function took it with a claim (``select_for_update(skip_locked=True)``
in a transaction that moves it on), each replica works on other rows, and the work is that row's, done once.  A
row the function only reads, with no claim, is the same row in every replica (OG201)."""
from __future__ import annotations

import pytest

from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

MODELS = """
    from django.db import models


    class Letter(models.Model):
        to = models.EmailField()
        body = models.TextField()
        state = models.CharField(max_length=10, default="queued")
    """

CLAIMED = """
    from django.db import transaction

    from post.models import Letter


    def take_one():
        with transaction.atomic():
            letter = Letter.objects.select_for_update(skip_locked=True).filter(state="queued").first()
            if letter is None:
                return None
            letter.state = "sending"
            letter.save(update_fields=["state"])
        return letter
    """

READ_ONLY = """
    from post.models import Letter


    def take_one():
        return Letter.objects.filter(state="queued").order_by("id").first()
    """

COMMAND = """
    import time

    from django.core.mail import send_mail
    from django.core.management.base import BaseCommand

    {queue_import}


    def deliver(letter):
        send_mail("Hello", letter.body, None, [letter.to])


    class Command(BaseCommand):
        def handle(self, *args, **options):
            while True:
                letter = {take}()
                if letter is None:
                    time.sleep(5)
                    continue
                deliver(letter)
    """

FILES = {
    "post/__init__.py": "",
    "post/management/__init__.py": "",
    "post/management/commands/__init__.py": "",
    "post/models.py": MODELS,
    "Dockerfile": """
        FROM python:3.12-slim
        COPY . .
        CMD ["python", "manage.py", "send_letters"]
        """,
    "docker-compose.yml": """
        services:
          letters:
            build: .
            deploy:
              replicas: 3
        """,
}

COMMAND_PATH = "post/management/commands/send_letters.py"


def _check(tmp_path, queue, queue_import="from post.queue import take_one", take="take_one"):
    write(tmp_path, {**FILES, "post/queue.py": queue,
                     COMMAND_PATH: COMMAND.format(queue_import=queue_import, take=take)})
    return findings(tmp_path, COMMAND_PATH, codes=("OG201",))


@pytest.mark.parametrize("queue_import, take", [
    ("from post.queue import take_one", "take_one"),
    ("from post import queue", "queue.take_one"),
])
def test_a_row_taken_with_a_claim_is_that_replicas_work(tmp_path, queue_import, take):
    assert _check(tmp_path, CLAIMED, queue_import, take) == []


def test_a_row_only_read_is_every_replicas_work(tmp_path):
    assert (10, "OG201") in _check(tmp_path, READ_ONLY)
