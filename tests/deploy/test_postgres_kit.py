"""The PostgreSQL deployment files: the Kubernetes manifests validated offline against the API
schemas (kubernetes-validate), the compose files against the compose-spec schema
(check-jsonschema's copy) and by ``docker compose config`` where it exists, and the invariants
they promise: the server on ``index.engine: postgres`` with its DSN from a secret, a publish job
that loads into PostgreSQL, artifacts read-only where served."""

from __future__ import annotations

import copy
import dataclasses
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
DEPLOY = REPO / "deploy"
K8S = (DEPLOY / "k8s" / "ep-mcp.yaml", DEPLOY / "k8s" / "ep-mcp-postgres.yaml")
COMPOSE = (DEPLOY / "docker" / "compose.yaml", DEPLOY / "docker" / "compose.postgres.yaml")
K8S_VERSION = "1.30"  # the oldest Kubernetes the manifests promise to apply on


def _docs(path: Path) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d]


def _kinds(path: Path) -> dict[str, dict[str, Any]]:
    return {d["kind"]: d for d in _docs(path)}


def _k8s_problems(doc: dict[str, Any]) -> str | None:
    kv = pytest.importorskip("kubernetes_validate", reason="pip install kubernetes-validate")
    try:
        kv.validate(doc, K8S_VERSION, strict=True)
    except kv.ValidationError as exc:
        return f"{doc['kind']}/{doc['metadata']['name']}: {exc.message} at {list(exc.path)}"
    return None


@pytest.mark.parametrize("path", K8S, ids=lambda p: p.name)
def test_every_kubernetes_resource_validates_offline_and_strictly(path: Path) -> None:
    problems = [p for doc in _docs(path) if (p := _k8s_problems(doc))]
    assert problems == []


@pytest.mark.parametrize(
    ("where", "value"),
    [
        (("spec", "replica"), 3),  # a misspelt field (strict: unknown fields are errors)
        (("spec", "template", "spec", "containers", 0, "ports", 0, "containerPort"), "8000"),
        (("spec", "replicas"), "three"),
    ],
)
def test_the_offline_validation_catches_a_broken_deployment(
    where: tuple[str | int, ...], value: object
) -> None:
    deployment = copy.deepcopy(_kinds(K8S[1])["Deployment"])
    node: Any = deployment
    for key in where[:-1]:
        node = node[key]
    node[where[-1]] = value
    problem = _k8s_problems(deployment)
    assert problem is not None and problem.startswith("Deployment/ep-mcp: "), problem


def _mounted(pod: dict[str, Any], container: dict[str, Any], path: str) -> dict[str, Any]:
    """The volume of ``pod`` holding the file ``path`` in ``container`` (and its mount)."""
    (mount,) = [m for m in container["volumeMounts"] if path.startswith(m["mountPath"] + "/")]
    (volume,) = [v for v in pod["volumes"] if v["name"] == mount["name"]]
    return {**volume, "mount": mount}


def test_the_kubernetes_server_runs_on_postgres_with_its_dsn_from_a_secret() -> None:
    kinds = _kinds(K8S[1])
    config = yaml.safe_load(kinds["ConfigMap"]["data"]["config.yaml"])
    index = config["index"]
    assert index["engine"] == "postgres" and "dsn" not in index  # never a password in a ConfigMap
    for kind in ("Deployment", "Job"):
        pod = kinds[kind]["spec"]["template"]["spec"]
        (container,) = pod["containers"]
        secret = _mounted(pod, container, index["dsn_file"])
        assert secret["secret"]["secretName"] == "ep-mcp-db" and secret["mount"]["readOnly"]
        assert (
            _mounted(pod, container, "/etc/ep-mcp/config.yaml")["configMap"]["name"]
            == (kinds["ConfigMap"]["metadata"]["name"])
        )
        assert pod["securityContext"]["runAsNonRoot"] is True
        assert container["securityContext"]["readOnlyRootFilesystem"] is True
    server = kinds["Deployment"]["spec"]["template"]["spec"]
    (pack,) = config["packs"]
    artifacts = _mounted(server, server["containers"][0], pack["artifact"])
    assert artifacts["mount"]["readOnly"] is True
    assert server["containers"][0]["resources"]["limits"]["cpu"] == "2"  # 2 workers by default
    job = kinds["Job"]["spec"]["template"]["spec"]
    args = job["containers"][0]["args"]
    assert args[0] == "index" and args[args.index("--to") + 1] == "postgres"
    out = args[args.index("--out") + 1]
    assert Path(pack["artifact"]).parent == Path(out)
    assert not _mounted(job, job["containers"][0], f"{out}/x")["mount"].get("readOnly", False)
    # the database: a StatefulSet with pgvector, and its Service beside the server's
    db = kinds["StatefulSet"]["spec"]["template"]["spec"]["containers"][0]
    assert db["image"].startswith("pgvector/pgvector:")
    assert {d["metadata"]["name"] for d in _docs(K8S[1]) if d["kind"] == "Service"} == {
        "ep-mcp",
        "ep-mcp-postgres",
    }


def _compose_problems(path: Path) -> str:
    if shutil.which("check-jsonschema") is None and not _module("check_jsonschema"):
        pytest.skip("check-jsonschema is not installed (pip install -e '.[dev]')")
    done = subprocess.run(
        [sys.executable, "-m", "check_jsonschema", "--builtin-schema", "vendor.compose-spec",
         str(path)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    return "" if done.returncode == 0 else done.stdout + done.stderr


def _module(name: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(name) is not None


@pytest.mark.parametrize("path", COMPOSE, ids=lambda p: p.name)
def test_the_compose_files_match_the_compose_spec(path: Path) -> None:
    assert _compose_problems(path) == ""


def test_the_compose_spec_check_catches_a_misspelt_key(tmp_path: Path) -> None:
    compose = yaml.safe_load(COMPOSE[1].read_text())
    compose["services"]["ep-mcp"]["secret"] = compose["services"]["ep-mcp"].pop("secrets")
    broken = tmp_path / "compose.yaml"
    broken.write_text(yaml.safe_dump(compose))
    assert "secret" in _compose_problems(broken)


def test_the_compose_server_runs_on_postgres_and_the_publisher_loads_into_it() -> None:
    compose = yaml.safe_load(COMPOSE[1].read_text())
    services = compose["services"]
    config_file = DEPLOY / "docker" / "config.postgres.yaml"
    config = yaml.safe_load(config_file.read_text())
    assert config["index"]["engine"] == "postgres" and "dsn" not in config["index"]
    secret = Path(config["index"]["dsn_file"])
    assert secret.parent == Path("/run/secrets") and secret.name in compose["secrets"]
    for name in ("ep-mcp", "publish"):
        service = services[name]
        assert secret.name in service["secrets"]
        assert service["depends_on"]["postgres"]["condition"] == "service_healthy"
        assert f"./{config_file.name}:/etc/ep-mcp/config.yaml:ro" in service["volumes"]
        assert service["read_only"] is True and not service["user"].startswith("0")
    assert "./artifacts:/srv/ep-mcp/artifacts:ro" in services["ep-mcp"]["volumes"]
    assert "./artifacts:/srv/ep-mcp/artifacts" in services["publish"]["volumes"]
    command = services["publish"]["command"]
    assert command[0] == "index" and command[command.index("--to") + 1] == "postgres"
    assert services["publish"]["profiles"] == ["publish"]  # `up` does not run it
    assert services["postgres"]["image"].startswith("pgvector/pgvector:")
    assert "ports" not in services["postgres"]  # only the compose network reaches it
    assert "pg_isready" in " ".join(services["postgres"]["healthcheck"]["test"])


def test_the_postgres_configs_load_as_settings() -> None:
    from ep_mcp.config.load import load_settings
    from ep_mcp.config.model import IndexSettings

    if "engine" not in {f.name for f in dataclasses.fields(IndexSettings)}:
        pytest.skip(
            "index.engine is not in this build's settings (it comes with the postgres engine)"
        )
    configs = [yaml.safe_load((DEPLOY / "docker" / "config.postgres.yaml").read_text())]
    configs.append(yaml.safe_load(_kinds(K8S[1])["ConfigMap"]["data"]["config.yaml"]))
    for data in configs:
        settings = load_settings(data=data)
        assert str(settings.index.engine) == "postgres"
        assert settings.index.dsn_file is not None and settings.index.dsn_file.is_absolute()


def _docker_compose() -> list[str] | None:
    if shutil.which("docker-compose"):
        return ["docker-compose"]
    if shutil.which("docker") is None:
        return None
    done = subprocess.run(["docker", "compose", "version"], capture_output=True, timeout=30)
    return ["docker", "compose"] if done.returncode == 0 else None


@pytest.mark.parametrize("path", COMPOSE, ids=lambda p: p.name)
def test_docker_compose_config_accepts_the_compose_files(path: Path) -> None:
    tool = _docker_compose()
    if tool is None:
        pytest.skip("docker compose is not installed (the compose-spec schema check ran instead)")
    done = subprocess.run(
        [*tool, "-f", str(path), "config", "--quiet"],
        capture_output=True, text=True, timeout=120, cwd=path.parent,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
