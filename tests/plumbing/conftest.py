"""The plumbing's tests: a second local server standing for an internal service (the laundromat's)."""

from tests.laundromat.test_fetching import hostile  # noqa: F401  (a fixture)
