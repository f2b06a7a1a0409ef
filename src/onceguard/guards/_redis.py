"""Redis backend (redis-py, sync and asyncio): ``SET NX PX``, renewal and release compare the owner token.

Keys: ``<namespace>c:{<key>}`` holds a claim or lease, ``<namespace>f:{<key>}`` the key's last fence,
``<namespace>s:{<key>}`` when guarded work on the key last finished. A user's key always sits inside the
braces after a fixed prefix, so it can never collide with the guards' own keys, and the braces are a
Redis Cluster hash tag: the keys one script touches live in one slot.

Fences come from the server's clock (microseconds), never below the last fence stored for the key: a
Redis restarted without persistence has lost every counter, but not the time, so a fence issued after the
restart is still larger than every fence issued before it. (A failover to a replica whose clock is behind
by more than the time the failover takes is the one case this does not cover.)
"""
from __future__ import annotations

import asyncio
import importlib
from typing import Any, List, Optional, Tuple, Type

from ._common import BackendError

_ACQUIRE = """
if not redis.call('set', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return -1 end
if ARGV[3] ~= '1' then return 0 end
local now = redis.call('time')
local fence = tonumber(now[1]) * 1000000 + tonumber(now[2])
local last = tonumber(redis.call('get', KEYS[2]) or '0')
if fence <= last then fence = last + 1 end
redis.call('set', KEYS[2], string.format('%d', fence), 'PX', ARGV[4])
return fence
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
_MARK_SUCCESS = """
local now = redis.call('time')
local ms = tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000)
redis.call('set', KEYS[1], string.format('%d', ms))
return ms
"""
_LAST_SUCCESS = """
local value = redis.call('get', KEYS[1])
if value then return tonumber(value) end
return -1
"""
#: A fence key outlives its lease by a day: long enough that a renewed lease keeps it, and the server's
#: clock keeps fences growing after it is gone.
_FENCE_KEEP_MS = 86_400_000
_SCHEMES = ("redis://", "rediss://", "unix://")
SOCKET_TIMEOUT_SECONDS = 2.0


def _redis_errors() -> Tuple[Type[BaseException], ...]:
    import redis

    return (redis.RedisError, OSError)


def _kind(client: Any) -> str:
    """``"async"`` or ``"sync"`` for a redis-py client or cluster client; a TypeError for anything else."""
    import redis

    async_types: List[type] = []
    try:
        import redis.asyncio

        async_types.append(redis.asyncio.Redis)
        from redis.asyncio.cluster import RedisCluster as AsyncCluster

        async_types.append(AsyncCluster)
    except ImportError:  # pragma: no cover - redis-py without asyncio support
        pass
    if isinstance(client, tuple(async_types)):
        return "async"
    sync_types: List[type] = [redis.Redis]
    try:
        from redis.cluster import RedisCluster

        sync_types.append(RedisCluster)
    except ImportError:  # pragma: no cover
        pass
    if isinstance(client, tuple(sync_types)):
        return "sync"
    raise TypeError(f"configure(redis=...) takes a redis:// URL or a redis-py client, not {type(client).__name__}")


class RedisBackend:
    name = "redis"

    def __init__(self, target: Any, namespace: str) -> None:
        try:
            importlib.import_module("redis")  # fail at configure() time, not at the first tick
        except ImportError as error:  # pragma: no cover - depends on the install
            raise ImportError("the Redis guards need redis-py: pip install 'onceguard-guards[redis]'") from error
        if not isinstance(namespace, str):
            raise TypeError("namespace must be text")
        self.namespace = namespace
        self._url: Optional[str] = None
        self._sync_client: Any = None
        self._async_client: Any = None
        if isinstance(target, str):
            if not target.startswith(_SCHEMES):
                raise ValueError(f"a Redis URL starts with redis://, rediss:// or unix://, got {target!r}")
            import redis

            self._url = target
            # Parse now: a malformed URL is a configuration error, not an outage at every tick.
            redis.Redis.from_url(target)
        elif _kind(target) == "async":
            self._async_client = target
        else:
            self._sync_client = target

    # -- keys -----------------------------------------------------------------------------------------

    def _keys(self, key: str) -> List[str]:
        return [f"{self.namespace}c:{{{key}}}", f"{self.namespace}f:{{{key}}}"]

    def _success_key(self, key: str) -> str:
        return f"{self.namespace}s:{{{key}}}"

    # -- clients --------------------------------------------------------------------------------------

    def _sync(self) -> Any:
        if self._sync_client is None:
            if self._async_client is not None:
                raise TypeError("onceguard.guards is configured with an asyncio Redis client: call the "
                                "asyncio guards (aclaim_period, arun_exclusive, ...) or configure a sync client")
            import redis

            assert self._url is not None
            self._sync_client = redis.Redis.from_url(
                self._url, socket_connect_timeout=SOCKET_TIMEOUT_SECONDS, socket_timeout=SOCKET_TIMEOUT_SECONDS)
        return self._sync_client

    # -- sync -----------------------------------------------------------------------------------------

    def _call(self, script: str, keys: List[str], args: List[Any]) -> int:
        client = self._sync()
        try:
            return int(client.eval(script, len(keys), *keys, *args))
        except _redis_errors() as error:
            raise BackendError(f"redis: {error}") from error

    def acquire(self, key: str, token: str, ttl_ms: int, fence: bool) -> Optional[int]:
        result = self._call(_ACQUIRE, self._keys(key), [token, ttl_ms, "1" if fence else "0", ttl_ms + _FENCE_KEEP_MS])
        return None if result < 0 else result

    def renew(self, key: str, token: str, ttl_ms: int) -> bool:
        return self._call(_RENEW, self._keys(key)[:1], [token, ttl_ms]) == 1

    def release(self, key: str, token: str) -> bool:
        return self._call(_RELEASE, self._keys(key)[:1], [token]) == 1

    def mark_success(self, key: str) -> int:
        return self._call(_MARK_SUCCESS, [self._success_key(key)], [])

    def last_success_ms(self, key: str) -> Optional[int]:
        found = self._call(_LAST_SUCCESS, [self._success_key(key)], [])
        return None if found < 0 else found

    # -- asyncio --------------------------------------------------------------------------------------

    async def _acall(self, script: str, keys: List[str], args: List[Any]) -> int:
        if self._async_client is not None:
            try:
                return int(await self._async_client.eval(script, len(keys), *keys, *args))
            except _redis_errors() as error:
                raise BackendError(f"redis: {error}") from error
        if self._url is None:  # an app's sync client: run it in a thread
            return await asyncio.to_thread(self._call, script, keys, args)
        # A client per call, closed after it: a client made for one event loop must not outlive it
        # (services that call asyncio.run() per job would keep a socket and a dead loop per run).
        import redis.asyncio

        client = redis.asyncio.Redis.from_url(
            self._url, socket_connect_timeout=SOCKET_TIMEOUT_SECONDS, socket_timeout=SOCKET_TIMEOUT_SECONDS)
        try:
            return int(await client.eval(script, len(keys), *keys, *args))
        except _redis_errors() as error:
            raise BackendError(f"redis: {error}") from error
        finally:
            close = getattr(client, "aclose", None) or client.close
            await close()

    async def aacquire(self, key: str, token: str, ttl_ms: int, fence: bool) -> Optional[int]:
        result = await self._acall(_ACQUIRE, self._keys(key),
                                   [token, ttl_ms, "1" if fence else "0", ttl_ms + _FENCE_KEEP_MS])
        return None if result < 0 else result

    async def arenew(self, key: str, token: str, ttl_ms: int) -> bool:
        return await self._acall(_RENEW, self._keys(key)[:1], [token, ttl_ms]) == 1

    async def arelease(self, key: str, token: str) -> bool:
        return await self._acall(_RELEASE, self._keys(key)[:1], [token]) == 1

    async def amark_success(self, key: str) -> int:
        return await self._acall(_MARK_SUCCESS, [self._success_key(key)], [])

    async def alast_success_ms(self, key: str) -> Optional[int]:
        found = await self._acall(_LAST_SUCCESS, [self._success_key(key)], [])
        return None if found < 0 else found
