"""Whether the rendering browser's own network is confined: what no page route sees (a WebSocket, a
service worker, a redirect the browser follows) meets only Chromium's network settings, so those
settings are ours (:data:`~votersdaily.rendering.NO_NETWORK_ARGS`) unless the operator states
(VOTERSDAILY_BROWSER_NETWORK_CONFINED) that the browser's own network reaches public addresses only.

Chromium takes the last of two equal switches, so ours, added last, win over the operator's
``--proxy-server``; but an operator's option can still undo them (``ignore_default_args`` drops
them, ``--no-proxy-server`` and a PAC script outrank any proxy, a remote browser or another browser
type never sees them, a persistent context launches without them). Such an option is refused, not
silently neutralised: the operator asked for their own network, and gets a line saying why not.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from scrapy_playwright.handler import DEFAULT_BROWSER_TYPE

from votersdaily.rendering import NO_NETWORK_ARGS

if TYPE_CHECKING:
    from scrapy.settings import BaseSettings

#: Chromium switches that decide where the browser's own connections go.
NETWORK_SWITCHES = (
    "--proxy-server",
    "--proxy-bypass-list",
    "--host-resolver-rules",
    "--no-proxy-server",
    "--proxy-pac-url",
    "--proxy-auto-detect",
)
#: Browser-context options that give a context a network of its own: a proxy of its own, or a
#: persistent context (``user_data_dir``), which Playwright launches from its own options only.
NETWORK_CONTEXT_OPTIONS = ("proxy", "user_data_dir")
STATEMENT = "VOTERSDAILY_BROWSER_NETWORK_CONFINED"
_UNTIL = (
    ", so that what no route sees (a WebSocket, a service worker, a redirect the browser follows) "
    "would reach the network unchecked: nothing is rendered until %s=True states that the "
    "browser's own network reaches public addresses only" % STATEMENT
)


def network_launch_options(options: dict[str, Any]) -> list[str]:
    """The operator's PLAYWRIGHT_LAUNCH_OPTIONS that set the browser's own network, named."""
    named = ["proxy"] if options.get("proxy") else []
    for arg in options.get("args") or []:
        switch = str(arg).split("=", 1)[0]
        if switch in NETWORK_SWITCHES and arg not in NO_NETWORK_ARGS:
            named.append(str(arg))
    ignored = options.get("ignore_default_args")
    if isinstance(ignored, list) and set(ignored) & set(NO_NETWORK_ARGS):
        named.append("ignore_default_args (naming our network switches)")
    return named


def network_context_options(context_kwargs: dict[str, Any] | None) -> list[str]:
    """The options of one browser context that give it a network of its own, named."""
    return [name for name in NETWORK_CONTEXT_OPTIONS if (context_kwargs or {}).get(name)]


def unconfined_reason(settings: BaseSettings) -> str | None:
    """Why the rendering browser's own network would not be ours to confine, or None when it is
    (or when the operator has stated that it is confined)."""
    if settings.getbool(STATEMENT):
        return None
    for remote in ("PLAYWRIGHT_CDP_URL", "PLAYWRIGHT_CONNECT_URL"):
        if settings.get(remote):
            return (
                "%s is set, but a remote browser gets none of the launch flags that confine its own "
                "network%s" % (remote, _UNTIL)
            )
    if settings.get("PLAYWRIGHT_BROWSER_PROVIDER"):
        return (
            "PLAYWRIGHT_BROWSER_PROVIDER is set: a browser provider of its own launches the browser, "
            "with or without the launch flags that confine its network%s" % _UNTIL
        )
    browser_type = settings.get("PLAYWRIGHT_BROWSER_TYPE") or DEFAULT_BROWSER_TYPE
    if browser_type != "chromium":
        return (
            "PLAYWRIGHT_BROWSER_TYPE is %s, but the launch flags that confine the browser's own "
            "network are Chromium's%s" % (browser_type, _UNTIL)
        )
    named = network_launch_options(settings.getdict("PLAYWRIGHT_LAUNCH_OPTIONS"))
    if named:
        return "PLAYWRIGHT_LAUNCH_OPTIONS set the browser's own network (%s), undoing ours%s" % (
            ", ".join(named),
            _UNTIL,
        )
    for name, context_kwargs in settings.getdict("PLAYWRIGHT_CONTEXTS").items():
        named = network_context_options(context_kwargs)
        if named:
            return "PLAYWRIGHT_CONTEXTS gives context %r a network of its own (%s)%s" % (
                name,
                ", ".join(named),
                _UNTIL,
            )
    return None
