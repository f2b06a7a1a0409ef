"""A function whose only callers are in migration code runs when the migrate step runs them, once, in one
process: its read-modify-write (OG301) races nothing.  Called from a request handler as well, it is every
replica's code again."""
from __future__ import annotations

from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

MODELS = """\
    from django.db import models


    class Category(models.Model):
        name = models.CharField(max_length=50)
        children_count = models.IntegerField(default=0)
"""

UTILS = """\
    def add_subcategories(Category, parent_name, names):
        parent = Category.objects.get(name=parent_name)
        for name in names:
            Category.objects.create(name=name)
            parent.children_count = parent.children_count + 1
            parent.save()
"""

MIGRATION = """\
    from django.db import migrations

    from catalogue.utils import add_subcategories


    def forwards(apps, schema_editor):
        Category = apps.get_model("catalogue", "Category")
        add_subcategories(Category, "Books", ["Fiction", "History"])


    class Migration(migrations.Migration):
        dependencies = [("catalogue", "0001_initial")]
        operations = [migrations.RunPython(forwards, migrations.RunPython.noop)]
"""

VIEW = """\
    from django.http import JsonResponse

    from .models import Category
    from .utils import add_subcategories


    def add_children(request, parent):
        add_subcategories(Category, parent, request.POST.getlist("name"))
        return JsonResponse({"ok": True})
"""


def _project(tmp_path, **more):
    files = {"catalogue/__init__.py": "", "catalogue/models.py": MODELS, "catalogue/utils.py": UTILS,
             "catalogue/migrations/__init__.py": "", "catalogue/migrations/0002_seed.py": MIGRATION}
    files.update(more)
    write(tmp_path, files)


def test_a_helper_only_migrations_call(tmp_path):
    _project(tmp_path)
    assert findings(tmp_path, "catalogue/utils.py", codes=("OG301",)) == []


def test_the_same_helper_a_view_also_calls(tmp_path):
    _project(tmp_path, **{"catalogue/views.py": VIEW})
    assert findings(tmp_path, "catalogue/utils.py", codes=("OG301",)) == [(5, "OG301")]
