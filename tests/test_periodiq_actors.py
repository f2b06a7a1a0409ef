"""OG201 for Dramatiq's periodic actors: ``@dramatiq.actor(periodic=cron(...))`` is enqueued by every
``periodiq`` process the deployment starts; one periodiq process (or none in view) enqueues each tick once,
and an actor without ``periodic=`` is no schedule."""
from __future__ import annotations

import pytest

from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

ACTORS = """\
    import dramatiq
    import httpx
    from periodiq import cron


    @dramatiq.actor({options})
    def bill_overage() -> None:
        httpx.post("https://billing.example/overage")
"""

ENTRYPOINT = "#!/bin/sh\nset -eu\n{periodiq}exec dramatiq billing.actors\n"


@pytest.mark.parametrize("options, periodiq, expected", [
    ('periodic=cron("0 * * * *")', "periodiq billing.actors &\n", [(7, "OG201")]),
    ('periodic=cron("0 * * * *")', "", []),  # no periodiq in this image: another, single process enqueues
    ("max_retries=0", "periodiq billing.actors &\n", []),  # an actor, not a schedule
])
def test_periodic_actors_and_the_periodiq_processes(tmp_path, options, periodiq, expected):
    write(tmp_path, {"pyproject.toml": "[project]\nname = 'billing'\n",
                     "Dockerfile": 'FROM python:3.12\nCOPY entrypoint.sh /entrypoint.sh\n'
                                   'ENTRYPOINT ["/entrypoint.sh"]\n',
                     "entrypoint.sh": ENTRYPOINT.format(periodiq=periodiq),
                     "billing/__init__.py": "", "billing/actors.py": ACTORS.format(options=options)})
    assert findings(tmp_path, "billing/actors.py") == expected
