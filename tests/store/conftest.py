"""The store's tests: a gate to stop a crawl at a known point (tests/support/processes.py)."""

from tests.support.processes import gate  # noqa: F401  (a fixture)
