"""The deployment kit in deploy/: each file checked for the invariants it promises."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from ep_mcp.config.load import load_settings

REPO = Path(__file__).resolve().parents[2]
DEPLOY = REPO / "deploy"


def _k8s() -> dict[str, dict[str, Any]]:
    docs = yaml.safe_load_all((DEPLOY / "k8s" / "ep-mcp.yaml").read_text())
    return {d["kind"]: d for d in docs if d}


def _app_paths() -> set[str]:
    from ep_mcp.serve.http import app as http_app

    text = Path(http_app.__file__).read_text()
    return set(re.findall(r'Route\("([^"]+)"', text))


def test_kubernetes_probes_ports_and_user_match_the_server() -> None:
    kinds = _k8s()
    config = yaml.safe_load(kinds["ConfigMap"]["data"]["config.yaml"])
    settings = load_settings(data=config)
    pod = kinds["Deployment"]["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    assert ports["http"] == settings.server.port
    for probe in ("readinessProbe", "livenessProbe", "startupProbe"):
        get = container[probe]["httpGet"]
        assert get["path"] in _app_paths() and get["path"] == "/health"
        assert get["port"] in ports
        host = {h["name"]: h["value"] for h in get["httpHeaders"]}["Host"]
        assert host in ("localhost", "127.0.0.1")  # always in the server's Host allow-list
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["runAsUser"] != 0
    sc = container["securityContext"]
    assert sc["readOnlyRootFilesystem"] is True and sc["allowPrivilegeEscalation"] is False
    mounts = {m["name"]: m for m in container["volumeMounts"]}
    art = mounts["artifacts"]
    assert art["readOnly"] is True
    for pack in settings.packs:
        assert pack.artifact is not None and pack.artifact.is_relative_to(art["mountPath"])
    service = kinds["Service"]["spec"]
    assert service["selector"] == kinds["Deployment"]["spec"]["selector"]["matchLabels"]
    assert {p["targetPort"] for p in service["ports"]} <= set(ports)
    paths = [p["path"] for r in kinds["Ingress"]["spec"]["rules"] for p in r["http"]["paths"]]
    for pack in settings.packs:
        assert pack.artifact is not None and f"/packs/{pack.artifact.name}/" in paths


def test_the_container_config_is_valid_and_the_image_runs_unprivileged() -> None:
    settings = load_settings(DEPLOY / "docker" / "config.yaml")
    dockerfile = (DEPLOY / "docker" / "Dockerfile").read_text()
    user = re.findall(r"^USER (\S+)", dockerfile, re.M)
    assert user and not user[-1].startswith(("0", "root"))
    assert f"EXPOSE {settings.server.port}" in dockerfile
    assert f"127.0.0.1:{settings.server.port}/health" in dockerfile
    compose = yaml.safe_load((DEPLOY / "docker" / "compose.yaml").read_text())
    service = compose["services"]["ep-mcp"]
    assert not service["user"].startswith("0") and service["read_only"] is True
    assert "/health" in " ".join(service["healthcheck"]["test"])


def test_the_systemd_unit_runs_as_a_user_with_hardening() -> None:
    unit = (DEPLOY / "systemd" / "ep-mcp.service").read_text()
    options = dict(
        line.split("=", 1) for line in unit.splitlines() if "=" in line and line[0] != "#"
    )
    assert options["User"] not in ("root", "0")
    for key, value in {
        "NoNewPrivileges": "yes",
        "ProtectSystem": "strict",
        "ProtectHome": "yes",
        "PrivateTmp": "yes",
        "RestrictSUIDSGID": "yes",
    }.items():
        assert options[key] == value, key


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="systemd-analyze absent")
def test_systemd_analyze_verify_accepts_the_unit(tmp_path: Path) -> None:
    assert systemd_verify_problems(_unit_here(tmp_path)) == []


def _unit_here(folder: Path, line: str = "", instead: str = "") -> Path:
    """The unit, run by this environment's ep-mcp (and ``line`` replaced by ``instead``)."""
    unit = (DEPLOY / "systemd" / "ep-mcp.service").read_text()
    exe = Path(sys.executable).parent / "ep-mcp"
    if line:
        assert line in unit.splitlines()
        unit = unit.replace(line, instead)
    path = folder / "ep-mcp.service"
    path.write_text(unit.replace("/opt/ep-mcp/venv/bin/ep-mcp", str(exe)))
    return path


def systemd_verify_problems(path: Path) -> list[str]:
    """What ``systemd-analyze verify`` says is wrong with the unit file at ``path``.

    A line ``PATH:LINE: …`` is about the file's own text (a bad value, an unknown key or
    section): always a problem, though systemd "ignores" it and exits 0. A line
    ``ep-mcp.service: …`` is about the unit on this machine: a problem unless it is the
    environment's ("Failed to …": no systemd as PID 1, no cgroups or namespaces in a container).
    """
    done = subprocess.run(
        ["systemd-analyze", "verify", "--man=no", str(path)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    own_text = re.compile(rf"{re.escape(str(path))}:\d+: ")
    about_unit = re.compile(rf"(^|\s){re.escape(path.name)}: ")
    return [
        line
        for line in (done.stderr + done.stdout).splitlines()
        if own_text.match(line) or (about_unit.search(line) and "Failed to" not in line)
    ]


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="systemd-analyze absent")
@pytest.mark.parametrize(
    ("line", "bad"),
    [
        ("Restart=on-failure", "Restart=sometimes"),
        ("TimeoutStopSec=20", "TimeoutStopSec=twenty"),
        ("ProtectSystem=strict", "ProtectSytem=strict"),
    ],
)
def test_systemd_analyze_verify_catches_a_bad_value(tmp_path: Path, line: str, bad: str) -> None:
    path = _unit_here(tmp_path, line, bad)
    lineno = (DEPLOY / "systemd" / "ep-mcp.service").read_text().splitlines().index(line) + 1
    (problem,) = systemd_verify_problems(path)
    assert problem.startswith(f"{path}:{lineno}: "), problem


@pytest.mark.skipif(
    shutil.which("nginx") is None and not os.access("/usr/sbin/nginx", os.X_OK),
    reason="nginx is not installed",
)
@pytest.mark.skipif(shutil.which("openssl") is None, reason="openssl is not installed")
def test_nginx_accepts_the_tls_site(tmp_path: Path) -> None:
    nginx = shutil.which("nginx") or "/usr/sbin/nginx"
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
         "-subj", "/CN=kb.example.com", "-keyout", str(key), "-out", str(cert)],
        check=True, capture_output=True, timeout=60,
    )  # fmt: skip
    site = (DEPLOY / "nginx" / "ep-mcp.conf").read_text()
    site = site.replace("/etc/letsencrypt/live/kb.example.com/fullchain.pem", str(cert))
    site = site.replace("/etc/letsencrypt/live/kb.example.com/privkey.pem", str(key))
    site = site.replace(
        "/etc/nginx/snippets/ep-mcp-routes.conf", str(DEPLOY / "nginx" / "ep-mcp-routes.conf")
    )
    site = re.sub(r"/var/log/nginx/", f"{tmp_path}/", site)
    (tmp_path / "site.conf").write_text(site)
    conf = tmp_path / "nginx.conf"
    conf.write_text(
        f"pid {tmp_path}/nginx.pid;\nerror_log {tmp_path}/error.log;\nevents {{}}\n"
        f"http {{\n include {DEPLOY / 'nginx' / 'ep-mcp-upstreams.conf'};\n"
        f" include {tmp_path / 'site.conf'};\n}}\n"
    )
    done = subprocess.run(
        [nginx, "-t", "-c", str(conf), "-e", str(tmp_path / "error.log")],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr


def _docker_works() -> bool:
    if shutil.which("docker") is None:
        return False
    try:
        return subprocess.run(["docker", "info"], capture_output=True, timeout=20).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


@pytest.mark.skipif(not _docker_works(), reason="no container builder (docker daemon) here")
def test_the_image_builds() -> None:
    done = subprocess.run(
        ["docker", "build", "-f", str(DEPLOY / "docker" / "Dockerfile"), "-t", "ep-mcp:test",
         str(REPO)],
        capture_output=True, text=True, timeout=1800,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
