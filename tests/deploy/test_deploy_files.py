"""The deploy files parse and pass their linters: hadolint, the compose spec, Kubernetes schemas, systemd."""
from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import yaml

from gateway.config import parse_config
from gateway.platforms.web_login import is_loopback, resolve_web_login

ROOT = Path(__file__).resolve().parent.parent.parent
DEPLOY = ROOT / "deploy"
BIN = Path(sys.executable).parent


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, capture_output=True, text=True, timeout=120, check=False)


def test_dockerfile_passes_hadolint_and_runs_as_non_root() -> None:
    """hadolint finds nothing; the final stage is slim, non-root and health-checked."""
    result = _run(str(BIN / "hadolint"), str(DEPLOY / "Dockerfile"))
    assert (result.returncode, result.stdout) == (0, "")
    final_stage = (DEPLOY / "Dockerfile").read_text().split("\nFROM ")[-1]
    assert final_stage.startswith("python:3.11-slim")
    assert "USER 10001:10001" in final_stage and "HEALTHCHECK" in final_stage


def test_compose_file_matches_the_compose_spec() -> None:
    """docker-compose.yml validates against the compose spec: Redis plus two gateway replicas."""
    result = _run(str(BIN / "check-jsonschema"), "--builtin-schema", "vendor.compose-spec", str(DEPLOY / "docker-compose.yml"))
    assert result.returncode == 0, result.stdout + result.stderr
    compose = yaml.safe_load((DEPLOY / "docker-compose.yml").read_text())
    assert set(compose["services"]) == {"redis", "gateway"}
    assert compose["services"]["gateway"]["deploy"]["replicas"] == 2


def test_kubernetes_manifests_validate_strictly() -> None:
    """Every manifest passes strict schema validation; the Deployment has probes on the admin port."""
    manifests = sorted(str(p) for p in (DEPLOY / "k8s").glob("*.yaml"))
    result = _run(str(BIN / "kubernetes-validate"), "--strict", "--quiet", *manifests)
    assert (result.returncode, result.stdout.strip()) == (0, "")
    kinds = {yaml.safe_load(Path(p).read_text())["kind"] for p in manifests}
    assert kinds == {"ConfigMap", "Deployment", "PersistentVolumeClaim", "Secret", "Service"}
    container = yaml.safe_load((DEPLOY / "k8s" / "deployment.yaml").read_text())["spec"]["template"]["spec"]["containers"][0]
    assert (container["livenessProbe"]["httpGet"]["path"], container["readinessProbe"]["httpGet"]["path"]) == ("/healthz", "/readyz")


def test_systemd_unit_verifies(tmp_path: Path) -> None:
    """systemd-analyze verify accepts the unit (ExecStart pointed at a binary that exists here)."""
    assert shutil.which("systemd-analyze"), "systemd-analyze is needed: apt-get install systemd"
    unit = (DEPLOY / "chorus.service").read_text()
    assert "Restart=on-failure" in unit and "NoNewPrivileges=yes" in unit and "ProtectSystem=strict" in unit
    local = tmp_path / "chorus.service"
    local.write_text("\n".join("ExecStart=/bin/true run" if line.startswith("ExecStart=") else line for line in unit.splitlines()))
    result = _run("systemd-analyze", "verify", str(local))
    assert (result.returncode, result.stderr.strip()) == (0, "")


def test_container_configs_are_valid_chorus_configs() -> None:
    """The container config and the ConfigMap's config load with an empty environment."""
    configmap = yaml.safe_load((DEPLOY / "k8s" / "configmap.yaml").read_text())
    for raw in (yaml.safe_load((DEPLOY / "config.yaml").read_text()), yaml.safe_load(configmap["data"]["config.yaml"])):
        config = parse_config(raw, env={})
        assert config.admin.port == 9090 and config.platforms.web.host == "0.0.0.0"


def test_every_deploy_form_gives_the_connection_caps_their_descriptors() -> None:
    """3 ports x gateway.max_connections (default 2000) + the rest fit: the unit and compose files raise nofile."""
    from gateway.config import GatewaySettings

    needed = 3 * GatewaySettings().max_connections + 1000
    unit = (DEPLOY / "chorus.service").read_text()
    (limit,) = [int(line.split("=", 1)[1]) for line in unit.splitlines() if line.startswith("LimitNOFILE=")]
    assert limit >= needed
    for name in ("docker-compose.yml", "docker-compose.replicas.yml"):
        gateway = yaml.safe_load((DEPLOY / name).read_text())["services"]["gateway"]
        assert gateway["ulimits"]["nofile"]["soft"] >= needed, name
    assert "--ulimit nofile=" in (DEPLOY / "Dockerfile").read_text()
    for manifest in ("k8s/deployment.yaml", "k8s-replicas/deployment.yaml"):
        assert "max_connections" in (DEPLOY / manifest).read_text(), manifest


def _required_names(text: str) -> set[str]:
    """The `${NAME}` references without a default: the environment must supply them."""
    return set(re.findall(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}", text))


def _deploy_configs() -> list[tuple[str, str]]:
    """Every Chorus config shipped under deploy/: the container config and each ConfigMap's config.yaml."""
    found: list[tuple[str, str]] = []
    for path in sorted(DEPLOY.rglob("*.y*ml")):
        for document in yaml.safe_load_all(path.read_text()):
            if not isinstance(document, dict):
                continue
            if "platforms" in document or "model" in document:
                found.append((str(path.relative_to(DEPLOY)), path.read_text()))
            elif document.get("kind") == "ConfigMap" and "config.yaml" in document.get("data", {}):
                found.append((str(path.relative_to(DEPLOY)), document["data"]["config.yaml"]))
    return found


def test_no_deploy_file_exposes_the_web_chat_without_a_token(tmp_path: Path) -> None:
    """Every config under deploy/ that puts the web chat on a non-loopback host requires a sign-in token,
    even with its token variable unset or empty; every compose file and Secret hands that variable in."""
    configs = _deploy_configs()
    assert {name for name, _ in configs} >= {"config.yaml", "k8s/configmap.yaml", "k8s-replicas/configmap.yaml"}
    for name, text in configs:
        raw = yaml.safe_load(text)
        for env in ({}, {"CHORUS_WEB_TOKEN": ""}):
            config = parse_config(raw, env={**dict.fromkeys(_required_names(text), ""), **env})
            web = config.platforms.web
            if web.enabled and not is_loopback(web.host):
                assert web.auth == "token", f"{name}: platforms.web.auth must be token on {web.host}"
                login = resolve_web_login(web, tmp_path / name.replace("/", "_"))
                assert login.access.required, f"{name}: the web chat on {web.host} would run without a token"
    for path in sorted(DEPLOY.glob("docker-compose*.yml")):
        gateway = yaml.safe_load(path.read_text())["services"]["gateway"]
        assert "CHORUS_WEB_TOKEN" in gateway["environment"], f"{path.name}: CHORUS_WEB_TOKEN is not passed in"
    for path in sorted(DEPLOY.rglob("secret.yaml")):
        assert "CHORUS_WEB_TOKEN" in yaml.safe_load(path.read_text())["stringData"], f"{path}: no CHORUS_WEB_TOKEN"
