"""The shared-store deploy files: compose with PostgreSQL, Redis and three replicas; Kubernetes with three pods."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import yaml

from gateway.config import parse_config

DEPLOY = Path(__file__).resolve().parent.parent.parent / "deploy"
BIN = Path(sys.executable).parent
SHARED_URLS = {"CHORUS_STORE_URL", "CHORUS_REDIS_URL"}


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, capture_output=True, text=True, timeout=120, check=False)


def test_replica_compose_has_postgres_redis_and_three_replicas_without_a_shared_volume() -> None:
    """Valid compose spec; the gateway mounts no volume and gets both shared URLs."""
    path = DEPLOY / "docker-compose.replicas.yml"
    result = _run(str(BIN / "check-jsonschema"), "--builtin-schema", "vendor.compose-spec", str(path))
    assert result.returncode == 0, result.stdout + result.stderr
    services = yaml.safe_load(path.read_text())["services"]
    gateway = services["gateway"]
    assert set(services) == {"postgres", "redis", "gateway"}
    assert (gateway["deploy"]["replicas"], "volumes" in gateway) == (3, False)
    assert SHARED_URLS <= set(gateway["environment"])
    assert gateway["environment"]["CHORUS_STORE_URL"].startswith("postgresql://chorus:")
    assert gateway["depends_on"]["postgres"]["condition"] == "service_healthy"


def test_replica_manifests_validate_and_use_no_persistent_volume() -> None:
    """Strict schemas pass; three replicas read the URLs from the Secret; home is an emptyDir, no PVC."""
    manifests = sorted((DEPLOY / "k8s-replicas").glob("*.yaml"))
    result = _run(str(BIN / "kubernetes-validate"), "--strict", "--quiet", *map(str, manifests))
    assert (result.returncode, result.stdout.strip()) == (0, "")
    docs = {doc["kind"]: doc for doc in (yaml.safe_load(p.read_text()) for p in manifests)}
    assert set(docs) == {"ConfigMap", "Deployment", "Secret", "Service"}
    spec = docs["Deployment"]["spec"]
    pod = spec["template"]["spec"]
    assert (spec["replicas"], spec["strategy"]["type"]) == (3, "RollingUpdate")
    assert all("persistentVolumeClaim" not in volume for volume in pod["volumes"])
    assert {"name": "home", "emptyDir": {}} in pod["volumes"]
    (container,) = pod["containers"]
    secret = container["envFrom"][0]["secretRef"]["name"]
    assert secret == docs["Secret"]["metadata"]["name"] and SHARED_URLS <= set(docs["Secret"]["stringData"])
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"


def test_replica_configs_select_postgres_and_redis_from_the_environment() -> None:
    """The ConfigMap's config reads both URLs from the environment; the container config defaults to SQLite."""
    configmap = yaml.safe_load((DEPLOY / "k8s-replicas" / "configmap.yaml").read_text())
    env = {"CHORUS_STORE_URL": "postgresql://chorus:pw@postgres:5432/chorus", "CHORUS_REDIS_URL": "redis://r:6379/0",
           "CHORUS_WEB_TOKEN": "from-the-secret"}
    config = parse_config(yaml.safe_load(configmap["data"]["config.yaml"]), env=env)
    assert (config.store.url, config.redis.url) == (env["CHORUS_STORE_URL"], env["CHORUS_REDIS_URL"])
    container = parse_config(yaml.safe_load((DEPLOY / "config.yaml").read_text()), env={})
    assert container.store.url is None
    shared = parse_config(yaml.safe_load((DEPLOY / "config.yaml").read_text()), env=env)
    assert shared.store.url == env["CHORUS_STORE_URL"]
