"""AWS pagination that always ends: a NextToken seen before (a buggy emulator or proxy) or
more pages than any answer of ours can have is a ProviderError, never an endless loop (the
Azure price code guards its NextPageLink the same way, azure/pricing.py)."""

from __future__ import annotations

from typing import Any, Callable, Iterator

from reclaunch.errors import ProviderError

MAX_PAGES = 1000   # describe_* pages hold up to 1000 items: a million resources of one kind


def pages(call: Callable[..., dict], kw: dict[str, Any], *, token_in: str = "NextToken",
          token_out: str = "NextToken", what: str = "AWS", max_pages: int = MAX_PAGES
          ) -> Iterator[dict]:
    """Each response of `call(**kw)`, following the token until there is none."""
    kw = dict(kw)
    seen: set[str] = set()
    for _ in range(max_pages):
        resp = call(**kw)
        yield resp
        token = resp.get(token_out) if isinstance(resp, dict) else None
        if not token:
            return
        if not isinstance(token, str) or token in seen:
            raise ProviderError(f"{what}: the API returned the same {token_out} twice; "
                                "stopped paging (an endpoint that loops)",
                                hint="check AWS_ENDPOINT_URL")
        seen.add(token)
        kw[token_in] = token
    raise ProviderError(f"{what}: more than {max_pages} pages; stopped paging")


def check_endpoint_env(environ: dict[str, str] | None = None) -> None:
    """AWS_ENDPOINT_URL and AWS_ENDPOINT_URL_<SERVICE> must be http(s) URLs with a host:
    botocore raises a bare ValueError ("Invalid endpoint") deep inside the first call."""
    import os
    from urllib.parse import urlsplit

    from reclaunch.errors import UsageError

    environ = os.environ if environ is None else environ
    for var, url in sorted(environ.items()):
        if not (var == "AWS_ENDPOINT_URL" or var.startswith("AWS_ENDPOINT_URL_")):
            continue
        try:
            parts = urlsplit(url)
            ok = parts.scheme in ("http", "https") and bool(parts.hostname) and parts.port != 0
        except ValueError:   # a port that is no number
            ok = False
        if not ok:
            raise UsageError(f"{var}={url[:200]!r} is not an http(s) URL",
                             hint=f"e.g. {var}=https://ec2.us-east-1.amazonaws.com, or unset it")
