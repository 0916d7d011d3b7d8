"""Redis-fed workers: a real redis-server per test (tests/support/processes.py)."""

from tests.support.processes import durable_redis, redis_server  # noqa: F401  (fixtures)
