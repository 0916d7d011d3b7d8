"""The installed Twisted reactor, typed for mypy.

Twisted types ``twisted.internet.reactor`` (and what its methods return) as zope interfaces, whose
methods mypy reads without ``self`` (no mypy-zope plugin here); every reactor Scrapy installs derives
from :class:`~twisted.internet.base.ReactorBase`, whose methods are typed as they are called.
"""

from __future__ import annotations

from typing import cast

from twisted.internet.base import ReactorBase


def installed_reactor() -> ReactorBase:
    """The reactor (imported on call: importing it earlier would install the default one)."""
    from twisted.internet import reactor

    return cast(ReactorBase, reactor)
