"""Issue 26: AWS pagination always ends (a repeated NextToken, too many pages), and a bad
AWS_ENDPOINT_URL or region is one clear line."""

from __future__ import annotations

import pytest

from reclaunch.errors import ProviderError, UsageError
from reclaunch.providers.aws.pages import check_endpoint_env, pages


class Looping:
    """An endpoint that answers every page with the same NextToken (seen with a proxy)."""

    def __init__(self, token="t1", key="Volumes"):
        self.calls, self.token, self.key = 0, token, key

    def __call__(self, **kw):
        self.calls += 1
        assert self.calls < 50, "paging never stopped"
        return {self.key: [{"n": self.calls}], "NextToken": self.token, "nextToken": self.token,
                "PriceList": []}


def test_a_repeated_token_stops_paging():
    call = Looping()
    with pytest.raises(ProviderError, match="same NextToken twice"):
        list(pages(call, {}))
    assert call.calls == 2


def test_too_many_pages_stop():
    n = iter(range(10**6))
    with pytest.raises(ProviderError, match="more than 5 pages"):
        list(pages(lambda **kw: {"NextToken": f"t{next(n)}"}, {}, max_pages=5))


def test_the_sweep_and_the_price_list_use_it():
    from reclaunch.providers.aws import pricing
    from reclaunch.providers.aws.sweep import AwsSweeper

    class Pricing:
        get_products = Looping()
    with pytest.raises(ProviderError, match="same NextToken"):
        pricing.on_demand_price(Pricing(), "p4d.24xlarge", "us-east-1")

    sweeper = AwsSweeper.__new__(AwsSweeper)
    looping = Looping(key="clusters")
    sweeper._call = lambda service, op, **kw: looping(**kw)
    with pytest.raises(ProviderError, match="eks.list_clusters: the API returned the same"):
        sweeper._pages("eks", "list_clusters", "clusters")


@pytest.mark.parametrize("url", ["not-a-url", "ftp://x", "http://", "http://h:notaport", "http://h:0"])
def test_a_bad_endpoint_url_is_one_line(url):
    with pytest.raises(UsageError, match="is not an http"):
        check_endpoint_env({"AWS_ENDPOINT_URL_EC2": url})
    check_endpoint_env({"AWS_ENDPOINT_URL": "http://127.0.0.1:5000", "OTHER": "x"})


def test_a_region_with_a_space_is_refused_not_squeezed():
    from reclaunch.providers import sweeper_for

    with pytest.raises(UsageError, match="'a b' is not a region name"):
        sweeper_for("aws", "a b")
