"""A cache in process memory that a getter fills on a miss is a memo, silent on its own; when a write path
changes the shared data and then refreshes or drops the cached entry, only the serving process's copy follows
the change and every other process and replica keeps the old value (OG608)."""
from __future__ import annotations

from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

QUOTAS = """
    from sqlalchemy import create_engine, text

    engine = create_engine("postgresql+psycopg://quota@db/quota")
    _quotas = {{}}


    def quota_of(tenant: str) -> int:
        known = _quotas.get(tenant)
        if known is not None:
            return known
        with engine.connect() as conn:
            value = conn.execute(text("SELECT quota FROM tenants WHERE slug = :s"), {{"s": tenant}}).scalar_one()
        _quotas[tenant] = {stored}
        return value


    def change_quota(tenant: str, quota: int) -> None:
        with engine.begin() as conn:
            conn.execute(text("UPDATE tenants SET quota = :q WHERE slug = :s"), {{"q": quota, "s": tenant}})
        {refresh}
    """

ROUTES = """
    from flask import Flask, request

    from {quotas} import change_quota, quota_of

    app = Flask(__name__)


    @app.get("/tenants/<slug>/quota")
    def read_quota(slug):
        return {{"quota": quota_of(slug)}}


    @app.put("/tenants/<slug>/quota")
    def write_quota(slug):
        change_quota(slug, int(request.get_json()["quota"]))
        return {{"ok": True}}
    """


def _project(tmp_path, refresh="_quotas[tenant] = quota", stored="value", quotas=".quotas"):
    write(tmp_path, {"billing/__init__.py": "",
                     "billing/quotas.py": QUOTAS.format(refresh=refresh, stored=stored),
                     "billing/routes.py": ROUTES.format(quotas=quotas)})


def test_a_memo_refreshed_by_the_write_route(tmp_path):
    _project(tmp_path)
    assert findings(tmp_path, "billing/quotas.py", codes=("OG608",)) == [(5, "OG608")]


def test_a_memo_whose_entry_the_write_route_drops(tmp_path):
    _project(tmp_path, refresh="_quotas.pop(tenant, None)", quotas="billing.quotas")
    assert findings(tmp_path, "billing/quotas.py", codes=("OG608",)) == [(5, "OG608")]


def test_a_memo_nothing_refreshes(tmp_path):
    _project(tmp_path, refresh="")
    assert findings(tmp_path, "billing/quotas.py", codes=("OG608",)) == []


def test_a_memo_whose_entries_expire(tmp_path):
    expiring = QUOTAS.replace("known = _quotas.get(tenant)\n        if known is not None:\n            return known",
                              "known = _quotas.get(tenant)\n        if known is not None and known[1] > time.monotonic():"
                              "\n            return known[0]")
    expiring = expiring.replace("from sqlalchemy", "import time\n    from sqlalchemy")
    write(tmp_path, {"billing/__init__.py": "",
                     "billing/quotas.py": expiring.format(refresh="_quotas[tenant] = (quota, time.monotonic() + 30)",
                                                          stored="(value, time.monotonic() + 30)"),
                     "billing/routes.py": ROUTES.format(quotas=".quotas")})
    assert findings(tmp_path, "billing/quotas.py", codes=("OG608",)) == []


SESSIONS = """
    import requests
    from flask import Flask
    from sqlalchemy import create_engine, text

    app = Flask(__name__)
    engine = create_engine("postgresql+psycopg://quota@db/quota")
    _clients = {}


    def client_for(tenant: str) -> requests.Session:
        held = _clients.get(tenant)
        if held is None:
            held = requests.Session()
            _clients[tenant] = held
        return held


    @app.get("/tenants/<slug>/ping")
    def ping(slug):
        return {"status": client_for(slug).get(f"https://{slug}.example/health", timeout=5).status_code}


    @app.delete("/tenants/<slug>")
    def retire(slug):
        with engine.begin() as conn:
            conn.execute(text("UPDATE tenants SET active = false WHERE slug = :s"), {"s": slug})
        _clients.pop(slug, None)
        return {"ok": True}
    """


def test_a_memo_of_objects_this_process_builds_mirrors_nothing_shared(tmp_path):
    write(tmp_path, {"billing/__init__.py": "", "billing/app.py": SESSIONS})
    assert findings(tmp_path, "billing/app.py", codes=("OG608",)) == []
