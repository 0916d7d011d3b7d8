"""Redis-fed workers: a real redis-server per test (tests/support/processes.py)."""

from tests.support.processes import durable_redis, gate, redis_server, volatile_redis  # noqa: F401  (fixtures)
