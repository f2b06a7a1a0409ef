"""A leader lease: taken with SET NX PX, renewed by a Lua script that extends the key only for its holder.

``try_acquire()`` answers ``True`` when SET NX won, else whether the holder's renewal succeeded; the program's
loop works only ``if leading:``.  The renewal script (``if redis.call('GET', KEYS[1]) == ARGV[1] then return
redis.call('PEXPIRE', ...) end return 0``) is true for the holder alone, so the lease is a claim.  Taken with a
plain SET after a GET instead, two replicas that read the key at once both take it (OG501).
"""
from __future__ import annotations

from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

LEASE = """\
    import uuid

    import redis

    RENEW = \"\"\"
    if redis.call('GET', KEYS[1]) == ARGV[1] then
      return redis.call('PEXPIRE', KEYS[1], ARGV[2])
    end
    return 0
    \"\"\"


    class Lease:
        def __init__(self, client: redis.Redis, ttl_ms: int) -> None:
            self.client = client
            self.key = "park:dispatcher"
            self.ttl_ms = ttl_ms
            self.token = uuid.uuid4().hex
            self._renew = client.register_script(RENEW)

        def try_acquire(self) -> bool:
            if self.client.set(self.key, self.token, nx=True, px=self.ttl_ms):
                return True
            return self.renew()

        def renew(self) -> bool:
            return bool(self._renew(keys=[self.key], args=[self.token, self.ttl_ms]))
"""

MAIN = """\
    import time

    import redis
    import requests

    from park.lease import Lease


    def dispatch() -> None:
        requests.put("https://controller.example.org/limits", json={})


    def main() -> None:
        lease = Lease(redis.Redis(host="redis"), 30_000)
        while True:
            if lease.try_acquire():
                dispatch()
            time.sleep(10)


    if __name__ == "__main__":
        main()
"""


def _project(tmp_path, lease: str = LEASE) -> None:
    write(tmp_path, {"park/__init__.py": "", "park/lease.py": lease, "park/main.py": MAIN})
    (tmp_path / "Dockerfile").write_text('FROM python:3.12\nCMD ["python", "-m", "park.main"]\n')


def test_a_lease_renewed_only_by_its_holder_is_a_claim(tmp_path):
    _project(tmp_path)
    assert findings(tmp_path, "park/main.py") == []


def test_a_lease_taken_with_a_plain_set_after_a_get_is_reported(tmp_path):
    plain = LEASE.replace("""            if self.client.set(self.key, self.token, nx=True, px=self.ttl_ms):
                return True
            return self.renew()""", """            holder = self.client.get(self.key)
            if holder is None:
                self.client.set(self.key, self.token, px=self.ttl_ms)
                return True
            return False""")
    _project(tmp_path, plain)
    assert [code for _, code in findings(tmp_path, "park/lease.py", codes=("OG501",))] == ["OG501"]


def test_a_lost_renewal_warned_about_is_no_skip_log(tmp_path):
    main = MAIN.replace("""        while True:
            if lease.try_acquire():
                dispatch()
            time.sleep(10)""", """        leading = False
        while True:
            if leading:
                leading = lease.renew()
                if not leading:
                    log.warning("dispatch lease lost")
            else:
                leading = lease.try_acquire()
            if leading:
                dispatch()
            time.sleep(10)""").replace("import time\n", "import logging\n    import time\n").replace(
        "from park.lease import Lease\n", "from park.lease import Lease\n\n    log = logging.getLogger(__name__)\n")
    write(tmp_path, {"park/__init__.py": "", "park/lease.py": LEASE, "park/main.py": main})
    (tmp_path / "Dockerfile").write_text('FROM python:3.12\nCMD ["python", "-m", "park.main"]\n')
    assert findings(tmp_path, "park/main.py", codes=("OG201", "OG203")) == []
