"""A decorator of the project that turns what it decorates into a command line's command (its def, or its
class's ``__call__``, applies ``click.command``) makes a command a person runs: one process, once; its
read-modify-write races nothing (OG301 silent), as under ``@click.command()`` itself."""
from __future__ import annotations

import pytest

from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

COMMANDS = """\
    import functools

    import click
    from flask.cli import with_appcontext

    from .models import Counter


    class ops_command:
        def __init__(self, name=None):
            self.name = name

        def __call__(self, func):
            wrapper = functools.wraps(func)(lambda *args, **kwargs: func(*args, **kwargs))
            return with_appcontext(click.command(name=self.name)(wrapper))


    def as_command(func):
        return click.command()(func)


    @{decorator}
    def bump_counter():
        counter = Counter.objects.get(pk=1)
        counter.value = counter.value + 1
        counter.save()
"""

MODELS = """\
    from django.db import models


    class Counter(models.Model):
        value = models.IntegerField(default=0)
"""

VIEW = """\
    from django.http import JsonResponse

    from .counters import bump_counter


    def bump(request):
        bump_counter()
        return JsonResponse({"ok": True})
"""


@pytest.mark.parametrize("decorator", ["ops_command()", "as_command", "click.command()"])
def test_a_command_made_by_a_project_decorator(tmp_path, decorator):
    write(tmp_path, {"bank/__init__.py": "", "bank/models.py": MODELS,
                     "bank/counters.py": COMMANDS.replace("{decorator}", decorator)})
    assert findings(tmp_path, "bank/counters.py", codes=("OG301",)) == []


def test_the_same_function_a_view_calls(tmp_path):
    write(tmp_path, {"bank/__init__.py": "", "bank/models.py": MODELS,
                     "bank/counters.py": COMMANDS.replace("    @{decorator}\n", ""), "bank/views.py": VIEW})
    assert findings(tmp_path, "bank/counters.py", codes=("OG301",)) == [(24, "OG301")]
