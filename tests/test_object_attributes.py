"""OG301 reads a change of a model's column.  An attribute the model class sets in ``__init__`` and does not
declare among its columns (``self.console = Console(path)``, whose ``+=`` appends to a file) is state of the
Python object: its save writes no such column.  A class that declares no columns, a record it serialises whole
(``save()`` puts every attribute in Redis), may persist any attribute it sets."""
from __future__ import annotations

from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

MODELS = """\
    from django.db import models


    class Console:
        def __init__(self, path):
            self.path = path

        def __iadd__(self, text):
            with open(self.path, "a") as handle:
                handle.write(text)
            return self


    class Job(models.Model):
        progress = models.IntegerField(default=0)

        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self.console = Console(f"/var/log/jobs/{self.pk}.txt")

        def note(self, text):
            self.console += text
            self.save()

        def advance(self):
            self.progress = self.progress + 1
            self.save()
"""


def test_an_attribute_the_model_sets_in_init_is_no_column(tmp_path):
    write(tmp_path, {"jobs/__init__.py": "", "jobs/models.py": MODELS})
    assert findings(tmp_path, "jobs/models.py", codes=("OG301",)) == [(26, "OG301")]


RECORD = """\
    import json

    import redis

    client = redis.Redis(host="cache")


    class Challenge:
        def __init__(self, key, received=0):
            self.key = key
            self.received = received

        def save(self):
            client.set(self.key, json.dumps({"received": self.received}), ex=300)

        def answered(self):
            self.received = self.received + 1
            self.save()
"""


def test_a_record_saved_whole_keeps_every_attribute(tmp_path):
    write(tmp_path, {"auth/__init__.py": "", "auth/challenges.py": RECORD})
    assert findings(tmp_path, "auth/challenges.py", codes=("OG301",)) == [(17, "OG301")]
