"""OG606: a process lock around a check-then-create written with an ORM's class methods or async manager.

``async with self._slug_lock: if await Workspace.filter(slug=s).exists(): raise ...; await Workspace.create(...)``
(Tortoise) or ``Workspace.objects.aexists()`` / ``acreate()`` (Django's async manager): the create is a write of
shared rows, so the ``asyncio.Lock`` excludes only this process's callers.
"""
from __future__ import annotations

import pytest
from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

MODELS = {
    "tortoise": "from tortoise import fields\nfrom tortoise.models import Model\n\n\nclass Workspace(Model):\n"
                "    slug = fields.CharField(max_length=63)\n",
    "django": "from django.db import models\n\n\nclass Workspace(models.Model):\n"
              "    slug = models.CharField(max_length=63)\n",
}

SERVICE = """\
    import asyncio

    from .models import Workspace


    class WorkspaceService:
        _slug_lock = asyncio.Lock()

        async def create(self, slug):
            async with self._slug_lock:
                if await {exists}:
                    raise ValueError(slug)
                return await {create}
"""

SPELLINGS = {
    "tortoise": ("Workspace.filter(slug=slug).exists()", "Workspace.create(slug=slug)"),
    "django": ("Workspace.objects.filter(slug=slug).aexists()", "Workspace.objects.acreate(slug=slug)"),
}


@pytest.mark.parametrize("orm", ["tortoise", "django"])
def test_a_process_lock_around_an_orm_check_then_create(tmp_path, orm):
    exists, create = SPELLINGS[orm]
    write(tmp_path, {"ws/__init__.py": "", "ws/models.py": MODELS[orm],
                     "ws/service.py": SERVICE.replace("{exists}", exists).replace("{create}", create)})
    assert findings(tmp_path, "ws/service.py", codes=("OG606",)) == [(10, "OG606")]


def test_a_create_on_a_class_that_is_no_model_is_no_row_write(tmp_path):
    write(tmp_path, {"ws/__init__.py": "", "ws/models.py": "class Workspace:\n    @classmethod\n    async def create(cls, slug):\n        return cls()\n\n    @classmethod\n    def filter(cls, slug):\n        return cls()\n",
                     "ws/service.py": SERVICE.replace("{exists}", "Workspace.filter(slug=slug).exists()").replace(
                         "{create}", "Workspace.create(slug=slug)")})
    assert findings(tmp_path, "ws/service.py", codes=("OG606",)) == []
