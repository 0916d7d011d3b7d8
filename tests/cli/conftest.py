"""The CLI as a user runs it; Redis from the deployment tests' fixture."""

from tests.deploy.conftest import redis_server  # noqa: F401  (a fixture)
