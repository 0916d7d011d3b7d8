"""A Scrapy add-on that leaves out Scrapy's components this project's settings turn off, so they
are not even imported.

Scrapy imports every component of ``EXTENSIONS_BASE`` and ``DOWNLOADER_MIDDLEWARES_BASE`` before
the component itself says it is off: the remote-control extension imports aiohttp (0.1 s), the cookies
middleware tldextract (0.03 s) and the telnet console twisted.conch (0.01 s) at the start of every
crawl, where ``REMOTE_CONTROL_ENABLED``, ``COOKIES_ENABLED`` and ``TELNETCONSOLE_ENABLED`` are False. Add-ons run once every other source of settings (the project,
``-s``, the spider's ``custom_settings``) has been applied: a component whose setting is then False
is dropped from its base list, and one turned on is loaded as Scrapy always does.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from scrapy.settings import BaseSettings

#: (base setting, component, the boolean setting that turns it on).
SWITCHED: tuple[tuple[str, str, str], ...] = (
    ("EXTENSIONS_BASE", "scrapy.extensions.remote_control.RemoteControl", "REMOTE_CONTROL_ENABLED"),
    ("EXTENSIONS_BASE", "scrapy.extensions.telnet.TelnetConsole", "TELNETCONSOLE_ENABLED"),
    (
        "DOWNLOADER_MIDDLEWARES_BASE",
        "scrapy.downloadermiddlewares.cookies.CookiesMiddleware",
        "COOKIES_ENABLED",
    ),
)


class LeaveOutSwitchedOff:
    """``ADDONS = {"votersdaily.switched_off.LeaveOutSwitchedOff": 0}`` (the project's settings)."""

    def update_settings(self, settings: BaseSettings) -> None:
        for base, component, switch in SWITCHED:
            components = settings[base]
            if not settings.getbool(switch) and components is not None and component in components:
                components.set(component, None, priority="addon")
