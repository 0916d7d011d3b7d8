"""Which settings would give the rendering browser a network of its own (votersdaily/rendering/
confinement.py): each is named in the refusal, and the operator's statement lets all of them be."""

from __future__ import annotations

import pytest
from scrapy.settings import Settings

from votersdaily.rendering import NO_NETWORK_ARGS, RENDER_SETTINGS
from votersdaily.rendering.confinement import unconfined_reason

LAUNCH = RENDER_SETTINGS["PLAYWRIGHT_LAUNCH_OPTIONS"]


def launch(**options) -> dict:
    return {"PLAYWRIGHT_LAUNCH_OPTIONS": {**LAUNCH, **options}}


@pytest.mark.parametrize(
    ("settings", "named"),
    [
        ({"PLAYWRIGHT_CDP_URL": "http://browser.example:9222"}, "PLAYWRIGHT_CDP_URL is set"),
        ({"PLAYWRIGHT_CONNECT_URL": "ws://browser.example:3000"}, "PLAYWRIGHT_CONNECT_URL is set"),
        ({"PLAYWRIGHT_BROWSER_PROVIDER": "somewhere.Provider"}, "PLAYWRIGHT_BROWSER_PROVIDER is set"),
        ({"PLAYWRIGHT_BROWSER_TYPE": "firefox"}, "PLAYWRIGHT_BROWSER_TYPE is firefox"),
        (launch(proxy={"server": "http://proxy.example:3128"}), "(proxy)"),
        (launch(args=["--proxy-server=http://proxy.example:3128"]), "--proxy-server=http://proxy"),
        (launch(args=["--proxy-bypass-list=*"]), "--proxy-bypass-list=*"),
        (launch(args=["--host-resolver-rules=MAP * 10.0.0.1"]), "--host-resolver-rules=MAP * 10.0.0.1"),
        (launch(args=["--no-proxy-server"]), "--no-proxy-server"),
        (launch(args=["--proxy-pac-url=http://pac.example/p"]), "--proxy-pac-url"),
        (launch(ignore_default_args=NO_NETWORK_ARGS[:1]), "ignore_default_args"),
        ({"PLAYWRIGHT_CONTEXTS": {"c": {"proxy": {"server": "http://p.example"}}}}, "context 'c'"),
        ({"PLAYWRIGHT_CONTEXTS": {"c": {"user_data_dir": "profile"}}}, "(user_data_dir)"),
    ],
)
def test_settings_that_would_undo_the_browsers_confinement_are_named(settings, named):
    reason = unconfined_reason(Settings({**RENDER_SETTINGS, **settings}))
    assert reason is not None and named in reason
    assert reason.endswith("states that the browser's own network reaches public addresses only")
    stated = Settings({**RENDER_SETTINGS, **settings, "VOTERSDAILY_BROWSER_NETWORK_CONFINED": True})
    assert unconfined_reason(stated) is None


def test_our_own_launch_options_are_confined():
    """Ours, also repeated in the operator's args (added last again by the handler), and options
    that leave the network alone."""
    options = launch(
        args=[*LAUNCH["args"], *NO_NETWORK_ARGS, "--lang=en"], ignore_default_args=["--mute-audio"]
    )
    assert unconfined_reason(Settings({**RENDER_SETTINGS, **options})) is None
    assert (
        unconfined_reason(Settings({**RENDER_SETTINGS, "PLAYWRIGHT_CONTEXTS": {"d": {"locale": "en"}}}))
        is None
    )
