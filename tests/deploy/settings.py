"""The project settings plus the deployment tests' own spiders (tests/deploy/spiders.py)."""

from votersdaily.settings import *  # noqa: F403
from votersdaily.settings import SPIDER_MODULES as PROJECT_SPIDER_MODULES

SPIDER_MODULES = [*PROJECT_SPIDER_MODULES, "tests.deploy.spiders"]
