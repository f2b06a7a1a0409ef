"""OG301: counters of one row changed in different branches, each written back on its own (``views`` in one
branch, ``likes`` in another), are lost updates each; fields written back together by one ``save()`` are one."""
from __future__ import annotations

from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

MODELS = """\
    from django.db import models


    class Clip(models.Model):
        token = models.CharField(max_length=20, unique=True)
        views = models.IntegerField(default=0)
        likes = models.IntegerField(default=0)
        shares = models.IntegerField(default=0)
"""

VIEWS = """\
    from django.http import JsonResponse

    from reel.models import Clip


    def record(request, token, action):
        clip = Clip.objects.get(token=token)
        if action == "watch":
            clip.views += 1
            Clip.objects.filter(token=token).update(views=clip.views)
        elif action == "like":
            clip.likes += 1
            Clip.objects.filter(token=token).update(likes=clip.likes)
        elif action == "both":
            clip.likes += 1
            clip.shares += 1
            clip.save(update_fields=["likes", "shares"])
        return JsonResponse({"ok": True})
"""


def test_each_branchs_own_write_back_is_a_finding(tmp_path):
    write(tmp_path, {"pyproject.toml": "[project]\nname = 'reel'\n", "reel/__init__.py": "",
                     "reel/models.py": MODELS, "reel/views.py": VIEWS})
    assert findings(tmp_path, "reel/views.py", codes=("OG301",)) == [(9, "OG301"), (12, "OG301"), (15, "OG301")]
