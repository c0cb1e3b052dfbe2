"""A DSN's password never reaches a message: libpq quotes the word it could not parse, or the
whole URI, in its own errors, and `connect` passes libpq's first line on (attack pass)."""

from __future__ import annotations

import socket

import pytest

from ep_mcp.errors import ConfigError, IndexUnavailableError
from ep_mcp.index.pgconnect import connect

pytest.importorskip("psycopg")

SECRET = "s3cretPW"


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.parametrize(
    "dsn",
    [
        f"postgresql://ep:{SECRET}@[::1/ep",  # libpq echoes the whole URI
        f"host=127.0.0.1 password=x {SECRET} dbname=ep",  # missing "=" after the password's tail
        f"host=127.0.0.1 password={SECRET} {SECRET}x",
        f"postgresql://ep:{SECRET}@127.0.0.1:99999/ep",
        f"host=127.0.0.1 port={{port}} user=ep password={SECRET} connect_timeout=2",
    ],
)
@pytest.mark.parametrize("at_start", [True, False])
def test_no_message_quotes_the_password(dsn: str, at_start: bool) -> None:
    dsn = dsn.replace("{port}", str(_closed_port()))
    with pytest.raises((ConfigError, IndexUnavailableError)) as caught:
        connect(dsn, at_start=at_start)
    message = str(caught.value)
    assert SECRET not in message, message
    assert "\n" not in message
    assert "index.dsn" in message or "PostgreSQL" in message
