"""valkey-py is redis-py under another name: its clients' read-then-write is a lost update like any Redis one."""
from __future__ import annotations

import pytest
from test_job_discovery import findings, fresh_caches, write  # noqa: F401 (fresh_caches: autouse here too)

WALLET = """\
    from dataclasses import dataclass

    import valkey.asyncio as valkey


    @dataclass
    class Wallet:
        client: valkey.Valkey

        async def spend(self, card: str, cost: int) -> int:
            current = int(await self.client.hget(f"card:{card}", "credits") or 0)
            remaining = current - cost
            await self.client.hset(f"card:{card}", "credits", str(remaining))
            return remaining
"""


@pytest.mark.parametrize("wallet", [
    WALLET,
    WALLET.replace("import valkey.asyncio as valkey", "from valkey.asyncio import Valkey").replace(
        "client: valkey.Valkey", "client: Valkey"),
], ids=["module-alias", "class-import"])
def test_a_valkey_hash_read_changed_and_written_back_is_a_lost_update(tmp_path, wallet):
    write(tmp_path, {"arcade/__init__.py": "", "arcade/wallet.py": wallet})
    assert findings(tmp_path, "arcade/wallet.py", codes=("OG301",)) == [(13, "OG301")]


def test_the_arithmetic_done_by_the_server_is_fine(tmp_path):
    atomic = WALLET.replace("""            current = int(await self.client.hget(f"card:{card}", "credits") or 0)
            remaining = current - cost
            await self.client.hset(f"card:{card}", "credits", str(remaining))
            return remaining""", """            return await self.client.hincrby(f"card:{card}", "credits", -cost)""")
    write(tmp_path, {"arcade/__init__.py": "", "arcade/wallet.py": atomic})
    assert findings(tmp_path, "arcade/wallet.py", codes=("OG301",)) == []
