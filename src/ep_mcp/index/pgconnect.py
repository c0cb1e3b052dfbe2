"""Reaching PostgreSQL: the DSN from the settings, a connection or one line saying why not.

psycopg 3 is the optional extra ``postgres`` (``pip install 'ep-mcp[postgres]'``); without it
the postgres engine is a one-line error naming the extra. A DSN may hold a password, so no
message ever quotes it: errors name the setting (``index.dsn``) and PostgreSQL's first line.
"""

from __future__ import annotations

import re
from types import ModuleType
from typing import Any

from ep_mcp.config.model import IndexSettings
from ep_mcp.errors import ConfigError, IndexUnavailableError

CONNECT_TIMEOUT_S = 5


def psycopg_module() -> ModuleType:
    try:
        import psycopg
    except ImportError:
        raise ConfigError(
            "index.engine: postgres needs psycopg 3 — install it with "
            "`pip install 'ep-mcp[postgres]'`"
        ) from None
    return psycopg


def resolve_dsn(settings: IndexSettings) -> str:
    """The libpq DSN of ``index.dsn``, or the first line of the file ``index.dsn_file``."""
    if settings.dsn:
        return settings.dsn
    if settings.dsn_file is None:
        raise ConfigError(
            "index.engine: postgres needs index.dsn (a libpq DSN such as "
            "'host=127.0.0.1 dbname=ep') or index.dsn_file (a file holding one)"
        )
    try:
        text = settings.dsn_file.read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(
            f"index.dsn_file: cannot read {settings.dsn_file} ({type(exc).__name__}) — "
            "point it at a readable file holding one libpq DSN"
        ) from None
    if not text:
        raise ConfigError(f"index.dsn_file: {settings.dsn_file} is empty — write the DSN in it")
    return text.splitlines()[0]


def first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0][:300] if text else type(exc).__name__


_QUOTED = re.compile(r'"([^"]*)"')


def _secrets(dsn: str) -> list[str]:
    """The password a DSN holds, when libpq can parse it (psycopg reads PGPASSWORD apart)."""
    psycopg = psycopg_module()
    try:
        password = psycopg.conninfo.conninfo_to_dict(dsn).get("password")
    except psycopg.Error:
        return []
    return [str(password)] if password else []


def redact(text: str, dsn: str) -> str:
    """``text`` (libpq's message about ``dsn``) with nothing of the DSN's password in it: the
    parsed password is masked, and a quoted piece of the DSN itself (libpq quotes the word it
    could not parse, or the whole URI) is cut out whenever the DSN does not parse."""
    secrets = _secrets(dsn)
    for secret in secrets:
        text = text.replace(secret, "***")
    if not secrets:
        text = _QUOTED.sub(lambda m: '"…"' if m[1] not in ("", "=") and m[1] in dsn else m[0], text)
    return text


def connect(dsn: str, key: str = "index.dsn", *, at_start: bool = True) -> Any:
    """An autocommit connection; a DSN that is malformed or a server that cannot be reached is
    a `ConfigError` at start (``at_start``) and an `IndexUnavailableError` later."""
    psycopg = psycopg_module()
    try:
        conn = psycopg.connect(dsn, autocommit=True, connect_timeout=CONNECT_TIMEOUT_S)
    except psycopg.ProgrammingError as exc:  # the DSN itself does not parse
        raise ConfigError(
            f"{key}: not a libpq connection string ({redact(first_line(exc), dsn)}) — write it as "
            "'host=H port=P dbname=D user=U' or postgresql://U@H:P/D"
        ) from None
    except psycopg.Error as exc:
        what = redact(first_line(exc), dsn)
        if at_start:
            raise ConfigError(
                f"{key}: cannot connect to PostgreSQL ({what}) — check the host, port, "
                "database, user and password it names, and that the server is running"
            ) from None
        raise IndexUnavailableError(
            f"the PostgreSQL server of the index cannot be reached ({what}) — "
            "try again shortly; /health says degraded until it answers"
        ) from None
    encoding = conn.info.encoding
    if encoding not in ("utf-8", "utf8"):
        conn.close()
        raise ConfigError(
            f"{key}: the database's encoding is {encoding}, not UTF8 — create it with "
            "`CREATE DATABASE … ENCODING 'UTF8'` (pack text is Unicode)"
        )
    return conn
