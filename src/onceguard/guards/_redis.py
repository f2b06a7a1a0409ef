"""Redis backend (redis-py, sync and asyncio): ``SET NX PX``, renewal and release compare the owner token."""
from __future__ import annotations

import asyncio
import importlib
import weakref
from typing import Any, Optional

from ._common import BackendError

# Take the key only when it is free; the fencing counter grows on every acquisition of any key, so a
# token never repeats even after a key was released and taken again.
_ACQUIRE = """
if redis.call('set', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  if ARGV[3] == '1' then return redis.call('incr', KEYS[2]) end
  return 0
end
return -1
"""
# Compare-and-delete: only the owner may release.
_RELEASE = """
if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end
return 0
"""
# Compare-and-extend: only the owner may renew.
_RENEW = """
if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('pexpire', KEYS[1], ARGV[2]) end
return 0
"""

_TIMEOUT_SECONDS = 2.0


def _redis_errors() -> tuple:
    import redis

    return (redis.RedisError, OSError)


def _is_async_client(client: Any) -> bool:
    try:
        import redis.asyncio
    except ImportError:  # pragma: no cover - redis-py without asyncio support
        return False
    return isinstance(client, redis.asyncio.Redis)


class RedisBackend:
    name = "redis"

    def __init__(self, target: Any, namespace: str) -> None:
        try:
            importlib.import_module("redis")  # fail at configure() time, not at the first tick
        except ImportError as error:  # pragma: no cover - depends on the install
            raise ImportError("the Redis guards need redis-py: pip install 'onceguard[redis]'") from error
        self.namespace = namespace
        self._url: Optional[str] = target if isinstance(target, str) else None
        self._sync_client: Any = None
        self._async_client: Any = None
        if self._url is None:
            if _is_async_client(target):
                self._async_client = target
            else:
                self._sync_client = target
        # asyncio clients made from a URL belong to the event loop that made them.
        self._loop_clients: "weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Any]" = weakref.WeakKeyDictionary()

    # -- keys -----------------------------------------------------------------------------------------

    def _key(self, key: str) -> str:
        return self.namespace + key

    def _fence_key(self) -> str:
        return self.namespace + "fence"

    # -- clients --------------------------------------------------------------------------------------

    def _sync(self) -> Any:
        if self._sync_client is None:
            if self._url is None:
                raise BackendError("configured with an asyncio Redis client: use the a* guards")
            import redis

            self._sync_client = redis.Redis.from_url(
                self._url, socket_connect_timeout=_TIMEOUT_SECONDS, socket_timeout=_TIMEOUT_SECONDS)
        return self._sync_client

    def _async(self) -> Any:
        if self._async_client is not None:
            return self._async_client
        if self._url is None:
            return None  # a sync client: the a* guards run it in a thread
        loop = asyncio.get_running_loop()
        client = self._loop_clients.get(loop)
        if client is None:
            import redis.asyncio

            client = redis.asyncio.Redis.from_url(
                self._url, socket_connect_timeout=_TIMEOUT_SECONDS, socket_timeout=_TIMEOUT_SECONDS)
            self._loop_clients[loop] = client
        return client

    # -- sync -----------------------------------------------------------------------------------------

    def _call(self, script: str, keys: list, args: list) -> int:
        try:
            return int(self._sync().eval(script, len(keys), *keys, *args))
        except _redis_errors() as error:
            raise BackendError(f"redis: {error}") from error

    def acquire(self, key: str, token: str, ttl_ms: int, fence: bool) -> Optional[int]:
        result = self._call(_ACQUIRE, [self._key(key), self._fence_key()], [token, ttl_ms, "1" if fence else "0"])
        return None if result < 0 else result

    def renew(self, key: str, token: str, ttl_ms: int) -> bool:
        return self._call(_RENEW, [self._key(key)], [token, ttl_ms]) == 1

    def release(self, key: str, token: str) -> bool:
        return self._call(_RELEASE, [self._key(key)], [token]) == 1

    # -- asyncio --------------------------------------------------------------------------------------

    async def _acall(self, script: str, keys: list, args: list) -> int:
        client = self._async()
        if client is None:
            return await asyncio.to_thread(self._call, script, keys, args)
        try:
            return int(await client.eval(script, len(keys), *keys, *args))
        except _redis_errors() as error:
            raise BackendError(f"redis: {error}") from error

    async def aacquire(self, key: str, token: str, ttl_ms: int, fence: bool) -> Optional[int]:
        result = await self._acall(_ACQUIRE, [self._key(key), self._fence_key()],
                                   [token, ttl_ms, "1" if fence else "0"])
        return None if result < 0 else result

    async def arenew(self, key: str, token: str, ttl_ms: int) -> bool:
        return await self._acall(_RENEW, [self._key(key)], [token, ttl_ms]) == 1

    async def arelease(self, key: str, token: str) -> bool:
        return await self._acall(_RELEASE, [self._key(key)], [token]) == 1
