"""`--backend URL`: where Pulumi keeps a stack's state. Checked before anything is created,
and never shown or stored with its credentials.

A URL may carry userinfo (`https://user:token@host`) or a signed query (`?sig=...`). That
text goes to Pulumi and nowhere else: the journal, every message and the detached watcher's
command line see `redact(url)`, and a later command that needs the real URL is asked for
`--backend` again rather than reading a secret back from disk.
"""

from __future__ import annotations

import re
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from reclaunch.errors import UsageError

# Pulumi's state backends (pulumi.com/docs/iac/concepts/state-and-backends): the DIY object
# stores, a local directory, and Pulumi Cloud / a self-hosted service over https.
SCHEMES = ("s3", "azblob", "gs", "file", "https")
REDACTED = "***"
_SECRET_KEYS = re.compile(r"(secret|token|key|password|passwd|sig|credential)", re.I)


def redact(url: str | None) -> str | None:
    """The URL with userinfo and secret-looking query values replaced by ***."""
    if not url:
        return url
    try:
        u = urlsplit(url)
    except ValueError:
        return REDACTED
    netloc = u.netloc
    if "@" in netloc:
        netloc = f"{REDACTED}@{netloc.rpartition('@')[2]}"
    query = u.query
    if query:
        query = urlencode([(k, REDACTED if _SECRET_KEYS.search(k) else v)
                           for k, v in parse_qsl(query, keep_blank_values=True)], safe="*")
    return urlunsplit((u.scheme, netloc, u.path, query, u.fragment))


def check_backend(url: str | None) -> str | None:
    """The URL unchanged when it names a backend Pulumi can use; else a one-line UsageError
    (exit 2) that shows it redacted."""
    if url is None:
        return None
    shown = redact(url)
    if REDACTED in url:
        raise UsageError(f"--backend {shown}: give the real URL (credentials are never stored, "
                         "so a redacted one cannot be reused)")
    try:
        u = urlsplit(url.strip())
    except ValueError as exc:
        raise UsageError(f"--backend {shown}: not a URL ({exc})") from None
    if u.scheme.lower() not in SCHEMES:
        raise UsageError(f"--backend {shown}: unsupported scheme {u.scheme or '(none)'!r}; use "
                         + ", ".join(f"{s}://" for s in SCHEMES))
    if u.scheme.lower() != "file" and not u.netloc.rpartition("@")[2]:
        raise UsageError(f"--backend {shown}: names no bucket, container or host")
    if any(c.isspace() or ord(c) < 32 for c in url):
        raise UsageError(f"--backend {shown}: contains whitespace or control characters")
    return url


def needs_secret(url: str | None) -> bool:
    """A stored (redacted) URL that cannot be used without the credentials given again."""
    return bool(url) and REDACTED in url


def scrub(text: str, url: str | None) -> str:
    """`text` with every occurrence of `url` (and of its userinfo) replaced by the redacted."""
    if not url or not text:
        return text
    out = text.replace(url, redact(url) or "")
    userinfo = urlsplit(url).netloc.rpartition("@")[0] if "@" in url else ""
    return out.replace(userinfo, REDACTED) if userinfo else out


# Pulumi secrets providers backed by a cloud KMS (pulumi.com/docs/iac/concepts/secrets:
# awskms://<key id|alias/name>?region=, gcpkms://projects/P/locations/L/keyRings/R/cryptoKeys/K,
# azurekeyvault://<vault>.vault.azure.net/keys/<key>). The key is the user's: it must exist
# before the first stack, so `up` cannot create it with the stack it protects.
KMS_PROVIDERS = ("awskms", "gcpkms", "azurekeyvault")
BUCKETS = ("s3", "gs", "azblob")
SECRETS_ENV = "RECLAUNCH_SECRETS_PROVIDER"


def secrets_provider(url: str | None, env: dict[str, str] | None = None) -> str:
    """What encrypts the stack's secrets: $RECLAUNCH_SECRETS_PROVIDER (a cloud KMS key URL, or
    "passphrase") when set, else the passphrase. For state in a bucket, a KMS key keeps the
    decryption right with the cloud's IAM instead of a passphrase file on one laptop."""
    import os

    env = os.environ if env is None else env
    chosen = (env.get(SECRETS_ENV) or "").strip()
    if not chosen:
        return "passphrase"
    scheme = chosen.split("://", 1)[0].lower() if "://" in chosen else chosen.lower()
    if scheme != "passphrase" and scheme not in KMS_PROVIDERS:
        raise UsageError(f"{SECRETS_ENV}={chosen}: use passphrase or a key URL "
                         + ", ".join(f"{s}://..." for s in KMS_PROVIDERS))
    return chosen


def kms_advice(url: str | None, env: dict[str, str] | None = None) -> str | None:
    """A line for `up` when the state lives in a bucket but its secrets use the passphrase."""
    scheme = urlsplit(url).scheme.lower() if url else ""
    if scheme in BUCKETS and secrets_provider(url, env) == "passphrase":
        kms = {"s3": "awskms://alias/NAME?region=R", "gs": "gcpkms://projects/P/locations/"
               "L/keyRings/R/cryptoKeys/K", "azblob": "azurekeyvault://V.vault.azure.net/keys/K"}
        return (f"stack secrets in {scheme}:// are encrypted with a local passphrase; set "
                f"{SECRETS_ENV}={kms[scheme]} to use the cloud's KMS instead")
    return None
