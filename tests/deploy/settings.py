"""The project settings plus the deployment tests' own spiders (tests/deploy/spiders.py)."""

from votersdaily.settings import *  # noqa: F403

SPIDER_MODULES = ["votersdaily.spiders", "votersdaily.laundromat.spider", "tests.deploy.spiders"]
