"""Debian's glewlwyd (an OAuth 2 / OpenID Connect server) as a real authorization server on
127.0.0.1: a throwaway config and SQLite database, its OIDC plugin, three scopes and one
confidential client created through its admin API. `.ci/run` installs the package; without
the binary (or its database scripts) the tests that use it skip.
"""

from __future__ import annotations

import gzip
import json
import secrets
import shutil
import sqlite3
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx2
from joserfc.jwk import KeySet, RSAKey

INIT_SQL = Path("/usr/share/doc/glewlwyd/database/init.sqlite3.sql.gz")
MODULES = Path("/usr/lib/glewlwyd")
SCOPES = ("ep:pack:alpha", "ep:pack:beta", "ep:hub")


def available() -> str | None:
    """Why glewlwyd cannot run here, or None when it can."""
    if shutil.which("glewlwyd") is None:
        return "glewlwyd is not installed (apt-get install glewlwyd; .ci/run does)"
    if not INIT_SQL.is_file() or not MODULES.is_dir():
        return "glewlwyd's database scripts or modules are missing"
    return None


@dataclass(frozen=True)
class Glewlwyd:
    base: str
    issuer: str
    client_id: str
    client_secret: str

    @property
    def token_endpoint(self) -> str:
        return f"{self.issuer}/token"


CONFIG = """\
port={port}
bind_address="127.0.0.1"
external_url="http://127.0.0.1:{port}"
login_url="login.html"
api_prefix="api"
log_mode="console"
log_level="WARNING"
cookie_secure=0
session_expiration=3600
session_key="GLEWLWYD2_SESSION_ID"
admin_scope="g_admin"
profile_scope="g_profile"
user_module_path="{modules}/user"
client_module_path="{modules}/client"
user_auth_scheme_module_path="{modules}/scheme"
plugin_module_path="{modules}/plugin"
use_secure_connection=false
secure_connection_key_file=""
secure_connection_pem_file=""
hash_algorithm="SHA512"
database =
{{
  type = "sqlite3"
  path = "{db}"
}};
"""


def _plugin(issuer: str) -> dict[str, object]:
    key = RSAKey.generate_key(
        2048, parameters={"kid": "g1", "alg": "RS256", "use": "sig"}, private=True
    )
    return {
        "module": "oidc",
        "name": "oidc",
        "display_name": "oidc",
        "enabled": True,
        "parameters": {
            "iss": issuer,
            "jwks-private": json.dumps(KeySet([key]).as_dict(private=True)),
            "default-kid": "g1",
            "jwt-type": "rsa",
            "jwt-key-size": "256",
            "access-token-duration": 3600,
            "refresh-token-duration": 1209600,
            "code-duration": 600,
            "allow-non-oidc": True,
            "auth-type-client-enabled": True,
            "auth-type-code-enabled": False,
            "auth-type-token-enabled": False,
            "auth-type-id-token-enabled": True,
            "auth-type-password-enabled": False,
            "auth-type-device-enabled": False,
            "auth-type-refresh-enabled": False,
            "scope": [],
            "additional-parameters": [],
            "claims": [],
            "introspection-revocation-allowed": True,
            "introspection-revocation-auth-scope": [],
            "introspection-revocation-allow-target-client": True,
            "oauth-as-metadata": True,
            "resource-allowed": True,
            "resource-scope": {},
            "resource-scope-and-client-property": False,
            "resource-client-property": "resource",
        },
    }


@contextmanager
def running(workdir: Path, port: int, resources: list[str]) -> Iterator[Glewlwyd]:
    """glewlwyd on ``port`` with a client allowed the ``resources`` (RFC 8707)."""
    db = workdir / "glewlwyd.db"
    with sqlite3.connect(db) as conn:
        conn.executescript(gzip.decompress(INIT_SQL.read_bytes()).decode("utf-8"))
    config = workdir / "glewlwyd.conf"
    config.write_text(CONFIG.format(port=port, modules=MODULES, db=db), encoding="utf-8")
    log = workdir / "glewlwyd.log"
    base = f"http://127.0.0.1:{port}"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            ["glewlwyd", "-c", str(config)], stdout=out, stderr=subprocess.STDOUT
        )
        try:
            yield _configure(base, proc, log, resources)
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:  # pragma: no cover
                proc.kill()
                proc.wait(timeout=10)


def _configure(
    base: str, proc: subprocess.Popen[bytes], log: Path, resources: list[str]
) -> Glewlwyd:
    admin = httpx2.Client(base_url=f"{base}/api", timeout=10)
    for _ in range(300):  # bounded poll until it listens (or exits)
        assert proc.poll() is None, log.read_text()
        try:
            r = admin.post("/auth/", json={"username": "admin", "password": "password"})
            if r.status_code == 200:
                break
        except httpx2.HTTPError:
            pass
        time.sleep(0.05)
    else:
        raise AssertionError(f"glewlwyd did not start: {log.read_text()}")
    issuer = f"{base}/api/oidc"
    r = admin.post("/mod/plugin/", json=_plugin(issuer))
    assert r.status_code == 200, r.text
    for scope in SCOPES:
        body = {"name": scope, "display_name": scope, "password_required": False, "scheme": {}}
        r = admin.post("/scope/", json=body)
        assert r.status_code == 200, r.text
    secret = secrets.token_urlsafe(24)
    client = {
        "client_id": "ep-client",
        "name": "ep-client",
        "confidential": True,
        "enabled": True,
        "password": secret,
        "client_secret": secret,
        "authorization_type": ["client_credentials"],
        "token_endpoint_auth_method": ["client_secret_basic", "client_secret_post"],
        "scope": list(SCOPES),
        "redirect_uri": [],
        "resource": resources,
    }
    r = admin.post("/client/", json=client)
    assert r.status_code == 200, r.text
    return Glewlwyd(base, issuer, "ep-client", secret)
