"""The host lists of the fetch policies: one ``host`` / ``host:port`` shape for the ingest and the
laundromat, entries that can never match refused when the setting is read."""

from __future__ import annotations

import pickle
import re

import pytest
from scrapy.exceptions import UsageError
from scrapy.settings import Settings

from votersdaily.defaults import set_defaults
from votersdaily.ingest.spider import IngestSpider
from votersdaily.laundromat.spider import LaundromatSpider
from votersdaily.plumbing.address_policy import AddressPolicy, HostNotAllowed, PrivateAddressRefused
from votersdaily.plumbing.hosts import BadHostEntry, HostList, parse_entry


@pytest.mark.parametrize(
    "entry, parsed",
    [
        ("127.0.0.1:18080", ("127.0.0.1", 18080)),
        ("127.0.0.1", ("127.0.0.1", None)),
        ("[::1]:8080", ("::1", 8080)),
        ("[0:0::1]", ("::1", None)),
        ("::1", ("::1", None)),
        (" Example.ORG. ", ("example.org", None)),
        ("localhost:80", ("localhost", 80)),
        ("bücher.example:443", ("xn--bcher-kva.example", 443)),
    ],
)
def test_entries_are_host_or_host_and_port(entry, parsed):
    assert parse_entry(entry, "INGEST_ALLOWED_HOSTS") == parsed


@pytest.mark.parametrize(
    "entry, why",
    [
        ("http://127.0.0.1:8080", "has a scheme"),
        ("https:example.org", "has a scheme"),
        ("127.0.0.1:8080/", "has a path"),
        ("example.org/data", "has a path"),
        ("127.0.0.1:0", "port that is not a number from 1 to 65535"),
        ("127.0.0.1:65536", "port that is not a number from 1 to 65535"),
        ("127.0.0.1:http", "port that is not a number from 1 to 65535"),
        ("127.0.0.1:", "port that is not a number from 1 to 65535"),
        (":8080", "has no host"),
        ("[]:8080", "has no IPv6 address"),
        ("[::1", "is not [IPv6 address]"),
        ("1:2:3", "is not an IPv6 address"),
        ("user@example.org", "has a user name"),
        ("*.example.org", "has a wildcard"),
        ("exa mple.org", "has spaces or control characters"),
        ("example.org\x00", "has spaces or control characters"),
        ("-bad-.example", "is not a host name"),
    ],
)
def test_entries_that_can_never_match_are_refused_naming_the_setting(entry, why):
    with pytest.raises(BadHostEntry) as refused:
        parse_entry(entry, "LAUNDROMAT_PRIVATE_HOSTS")
    message = str(refused.value)
    assert message.startswith("LAUNDROMAT_PRIVATE_HOSTS: %r " % entry) and why in message
    assert "\n" not in message


def test_a_port_entry_opens_that_port_only_a_host_entry_every_port():
    hosts = HostList.parse(["127.0.0.1:18080", "Example.org", "", " "], "INGEST_PRIVATE_HOSTS")
    assert hosts.matches("127.0.0.1", 18080)
    assert not hosts.matches("127.0.0.1", 18081)
    assert hosts.matches("EXAMPLE.ORG.", 8443) and hosts.matches("example.org", 80)
    assert not HostList.parse([""], "INGEST_PRIVATE_HOSTS")  # `-s INGEST_PRIVATE_HOSTS=`: none
    assert pickle.loads(pickle.dumps(hosts)) == hosts  # the laundromat's workers get it pickled


def test_a_remembered_normal_host_is_the_one_made_afresh_and_no_list_matches_nothing():
    """The SSRF guard normalises the same few hosts for every request: the remembered form is the
    uncached function's, asked again or not (names, IDN, addresses in several spellings, brackets,
    trailing dots, case); an empty list answers no without normalising, as the full check does."""
    from votersdaily.plumbing.hosts import normal_host

    hosts = [
        "127.0.0.1",
        "0:0::1",
        "[::1]",
        "EXAMPLE.org.",
        " Example.ORG ",
        "b\u00fccher.example",
        "xn--bcher-kva.example",
        "::ffff:192.168.0.1",
        "fe80::1",
        "bad..name",
        "\u2603.net",
        "",
    ]
    for _ in range(2):
        assert [normal_host(h) for h in hosts] == [normal_host.__wrapped__(h) for h in hosts]
    none, some = HostList(), HostList.parse(["127.0.0.1:18080", "example.org"], "INGEST_PRIVATE_HOSTS")
    for host in hosts:
        for port in (80, 18080):
            full = normal_host(host) in none.any_port or (normal_host(host), port) in none.ports
            assert none.matches(host, port) is full is False
            assert some.matches(host, port) == (
                normal_host.__wrapped__(host) in some.any_port
                or (normal_host.__wrapped__(host), port) in some.ports
            )


def _policy(**settings) -> AddressPolicy:
    values = Settings()
    set_defaults(values)
    values.setdict(settings, priority="cmdline")
    return AddressPolicy.from_settings(values, "INGEST")


def test_ingest_private_hosts_reach_one_port_of_a_private_host():
    policy = _policy(INGEST_PRIVATE_HOSTS="127.0.0.1:18080")
    assert policy.refusal("http://127.0.0.1:18080/paper.pdf") is None  # no address check: allowed
    assert policy.refusal("http://127.0.0.1:18081/admin") == ("127.0.0.1", 18081)
    with pytest.raises(PrivateAddressRefused):
        policy.check_addresses("http://127.0.0.1:18081/admin", ["127.0.0.1"])
    with pytest.raises(PrivateAddressRefused):
        policy.refusal("http://localhost:18080/")  # another name is another host


def test_ingest_allowed_hosts_take_ports_too():
    """`INGEST_ALLOWED_HOSTS=127.0.0.1:18080` used to refuse everything (its entries were compared
    with host names only)."""
    policy = _policy(INGEST_ALLOW_PRIVATE="True", INGEST_ALLOWED_HOSTS="127.0.0.1:18080")
    assert policy.refusal("http://127.0.0.1:18080/") is None
    with pytest.raises(HostNotAllowed, match=re.escape("127.0.0.1:18081 is not in")):
        policy.refusal("http://127.0.0.1:18081/")
    https = _policy(INGEST_ALLOWED_HOSTS="example.org:443")
    assert https.refusal("https://example.org/x") == ("example.org", 443)  # the scheme's port
    with pytest.raises(HostNotAllowed):
        https.refusal("http://example.org/x")


@pytest.mark.parametrize(
    "spider, setting",
    [
        (IngestSpider, "INGEST_ALLOWED_HOSTS"),
        (IngestSpider, "INGEST_PRIVATE_HOSTS"),
        (LaundromatSpider, "LAUNDROMAT_ALLOWED_HOSTS"),
        (LaundromatSpider, "LAUNDROMAT_PRIVATE_HOSTS"),
    ],
)
def test_spiders_refuse_a_bad_entry_before_the_crawl(spider, setting):
    settings = Settings({setting: "127.0.0.1:8080,http://127.0.0.1:8080/"})
    with pytest.raises(UsageError, match=re.escape("%s: 'http://127.0.0.1:8080/' has a scheme" % setting)):
        spider.update_settings(settings)
    spider.update_settings(Settings({setting: "127.0.0.1:8080,[::1]:8080"}))
