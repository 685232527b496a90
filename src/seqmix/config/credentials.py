"""Credentials inside URIs, hidden wherever a URI is shown or written.

``tracking.uri`` with ``user:password@`` is refused at config load, but a URI still reaches messages and files
by other ways: a ``--config`` value echoed in the error that refuses it, ``seqmix mlflow-init|mlflow-sync
--uri`` typed by hand, an MLflow error quoting the request URL. Every writer of such text passes it through
``redact``, so a password never lands in a log, a marker JSON or a run config. Imports nothing of seqmix:
the config foundation and every layer above it use it.
"""

from __future__ import annotations

import re
from typing import Any

HIDDEN = "***"

# scheme://<userinfo>@ : the userinfo runs to the last '@' before the host (an unescaped '@' inside a password
# belongs to it, as urllib.parse reads it), and stops at what ends an authority, a quote or whitespace (a URI
# inside a message or a JSON dump)
_USERINFO = re.compile(r"(?P<scheme>\b[A-Za-z][A-Za-z0-9+.\-]*://)(?P<info>[^\s/?#'\"<>\\]*)@")


def _hide(match: re.Match) -> str:
    info = match["info"]
    user, sep, _password = info.partition(":")
    # a lone userinfo is often a token (https://<token>@host), so it is hidden whole
    shown = f"{user}:{HIDDEN}" if sep else HIDDEN
    return f"{match['scheme']}{shown}@"


def redact(text: str) -> str:
    """``text`` with the password of every ``scheme://user:password@host`` in it replaced by ``***``
    (``http://ann:***@host``); a userinfo without ':' (often a token) becomes ``***``. Idempotent."""
    return _USERINFO.sub(_hide, text)


def redact_tracking(tracking: dict[str, Any]) -> dict[str, Any]:
    """A copy of a ``tracking`` settings block with its ``uri`` redacted: what a run config may carry (the
    jobs' credentials come from MLFLOW_TRACKING_USERNAME/PASSWORD or MLFLOW_TRACKING_TOKEN)."""
    out = dict(tracking)
    if isinstance(out.get("uri"), str):
        out["uri"] = redact(out["uri"])
    return out


def without_userinfo(uri: str) -> str:
    """``uri`` with no ``user[:password]@`` at all: what an unauthenticated probe (a health check) opens."""
    return _USERINFO.sub(lambda m: m["scheme"], uri)
