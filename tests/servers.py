"""Real Redis, PostgreSQL and PgBouncer servers for the guards' tests, started by the test run itself.

Where the environment names no server (ONCEGUARD_TEST_REDIS_URL, ONCEGUARD_TEST_POSTGRES_URL,
ONCEGUARD_TEST_PGBOUNCER_URL) and the server's program is installed, the run starts a private one on a
free loopback port for the session and stops it at the end, so the README's test command tests the guards
on any machine that has the servers installed. What could not be started is said in one line of the
summary; the tests that need it are then skipped with that reason (or fail under
ONCEGUARD_REQUIRE_SERVICES=1).
"""
from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
import time
from typing import Callable, Dict, List, Optional

_started: List[Callable[[], None]] = []
_summary: Dict[str, str] = {}


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _listening(port: int, tries: int = 100) -> bool:
    for _ in range(tries):
        try:
            socket.create_connection(("127.0.0.1", port), 0.2).close()
            return True
        except OSError:
            time.sleep(0.1)
    return False


def _as_postgres_user(command: List[str]) -> List[str]:
    # initdb, postgres and pgbouncer refuse to run as root.
    if hasattr(os, "geteuid") and os.geteuid() == 0 and shutil.which("runuser"):
        return ["runuser", "-u", "postgres", "--"] + command
    return command


def _start_redis(directory: str) -> Optional[str]:
    binary = shutil.which("redis-server")
    if binary is None:
        _summary["redis"] = "redis-server is not installed"
        return None
    port = _free_port()
    process = subprocess.Popen([binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                                "--appendonly", "no", "--dir", directory],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _started.append(lambda: (process.kill(), process.wait()))
    if not _listening(port):
        _summary["redis"] = "redis-server did not start"
        return None
    _summary["redis"] = f"redis-server on port {port}"
    return f"redis://127.0.0.1:{port}/0"


def _postgres_bin() -> Optional[str]:
    found = shutil.which("initdb")
    if found:
        return os.path.dirname(found)
    versions = sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=lambda p: [int(x) for x in p.split("/")[-2].split(".") if x.isdigit()])
    return versions[-1] if versions else None


def _start_postgres(directory: str) -> Optional[str]:
    bin_dir = _postgres_bin()
    if bin_dir is None:
        _summary["postgres"] = "PostgreSQL is not installed"
        return None
    data = os.path.join(directory, "pg")
    os.makedirs(data)
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        shutil.chown(directory, "postgres")
        shutil.chown(data, "postgres")
    init = subprocess.run(_as_postgres_user([os.path.join(bin_dir, "initdb"), "-D", data, "-A", "trust",
                                             "-U", "postgres"]), capture_output=True, text=True)
    if init.returncode != 0:
        _summary["postgres"] = f"initdb failed: {init.stderr.strip().splitlines()[-1:]}"
        return None
    port = _free_port()
    started = subprocess.run(_as_postgres_user([
        os.path.join(bin_dir, "pg_ctl"), "-D", data, "-l", os.path.join(directory, "pg.log"), "-w",
        "-o", f"-p {port} -k {directory} -c listen_addresses=127.0.0.1 -c fsync=off", "start"]),
        capture_output=True, text=True)
    if started.returncode != 0:
        _summary["postgres"] = "PostgreSQL did not start"
        return None
    _started.append(lambda: subprocess.run(_as_postgres_user([
        os.path.join(bin_dir, "pg_ctl"), "-D", data, "-m", "immediate", "-w", "stop"]), capture_output=True))
    _summary["postgres"] = f"PostgreSQL on port {port}"
    return f"postgresql://postgres@127.0.0.1:{port}/postgres"


def _start_pgbouncer(directory: str, postgres_url: Optional[str]) -> Optional[str]:
    binary = shutil.which("pgbouncer") or ("/usr/sbin/pgbouncer" if os.path.exists("/usr/sbin/pgbouncer") else None)
    if binary is None:
        _summary["pgbouncer"] = "pgbouncer is not installed"
        return None
    if postgres_url is None:
        _summary["pgbouncer"] = "no PostgreSQL to put it in front of"
        return None
    pg_port = postgres_url.rsplit(":", 1)[1].split("/")[0]
    port = _free_port()
    ini = os.path.join(directory, "pgbouncer.ini")
    users = os.path.join(directory, "userlist.txt")
    with open(ini, "w") as fh:
        fh.write(f"[databases]\n* = host=127.0.0.1 port={pg_port}\n[pgbouncer]\nlisten_addr = 127.0.0.1\n"
                 f"listen_port = {port}\nauth_type = trust\nauth_file = {users}\npool_mode = transaction\n"
                 f"unix_socket_dir =\nlogfile = {directory}/pgbouncer.log\npidfile = {directory}/pgbouncer.pid\n")
    with open(users, "w") as fh:
        fh.write('"postgres" ""\n')
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        for path in (ini, users):
            shutil.chown(path, "postgres")
    process = subprocess.Popen(_as_postgres_user([binary, ini]), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def stop() -> None:
        # runuser may not pass the signal on: stop pgbouncer by its own pid file.
        try:
            with open(os.path.join(directory, "pgbouncer.pid")) as fh:
                os.kill(int(fh.read().strip()), 15)
        except (OSError, ValueError):
            pass
        process.terminate()
        process.wait()

    _started.append(stop)
    if not _listening(port):
        _summary["pgbouncer"] = "pgbouncer did not start"
        return None
    _summary["pgbouncer"] = f"pgbouncer (transaction mode) on port {port}"
    return f"postgresql://postgres@127.0.0.1:{port}/postgres"


def start_missing_servers() -> None:
    """Start what the environment does not name; remember how to stop it."""
    wanted = {name: os.environ.get(f"ONCEGUARD_TEST_{name.upper()}_URL") for name in ("redis", "postgres", "pgbouncer")}
    if all(wanted.values()):
        _summary.update({name: "from the environment" for name in wanted})
        return
    directory = tempfile.mkdtemp(prefix="onceguard-servers-")
    os.chmod(directory, 0o755)
    _started.append(lambda: shutil.rmtree(directory, ignore_errors=True))  # last: after the servers stop
    if not wanted["redis"]:
        url = _start_redis(directory)
        if url:
            os.environ["ONCEGUARD_TEST_REDIS_URL"] = url
    else:
        _summary["redis"] = "from the environment"
    if not wanted["postgres"]:
        url = _start_postgres(directory)
        if url:
            os.environ["ONCEGUARD_TEST_POSTGRES_URL"] = url
            wanted["postgres"] = url
    else:
        _summary["postgres"] = "from the environment"
    if not wanted["pgbouncer"]:
        url = _start_pgbouncer(directory, wanted["postgres"])
        if url:
            os.environ["ONCEGUARD_TEST_PGBOUNCER_URL"] = url
    else:
        _summary["pgbouncer"] = "from the environment"


def stop_servers() -> None:
    while _started:
        try:
            _started.pop()()
        except Exception:  # noqa: BLE001 - stopping is best effort
            pass


def summary_line() -> str:
    missing = [f"{name}: {why}" for name, why in _summary.items()
               if not why.startswith(("from the environment", "redis-server on", "PostgreSQL on", "pgbouncer ("))]
    if not missing:
        return "guards' servers: " + "; ".join(f"{name} {why}" for name, why in _summary.items())
    return "guards' tests that need these servers were skipped: " + "; ".join(missing)
