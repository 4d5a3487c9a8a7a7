"""deploy/k8s: every manifest validated offline against the Kubernetes schemas
(kubernetes-validate), the CRDs against the structure of the fields they use, the ConfigMaps'
destinations.yaml against the bridge's own config model, and ``kubectl kustomize`` renders."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tomllib
from pathlib import Path
from typing import Any

import jsonschema
import kubernetes_validate
import pytest
import yaml

from bridge.config import parse_config

ROOT = Path(__file__).resolve().parents[2]
K8S = ROOT / "deploy" / "k8s"
KUSTOMIZATIONS = [K8S / "base", K8S / "overlays" / "ha", K8S / "spark"]
K8S_VERSION = kubernetes_validate.latest_version()
# Files holding partial objects (kustomize patches), validated once merged (rendered).
PATCHES = {"statefulset-ha.yaml", "configmap-ha.yaml"}

# The Prometheus Operator's and the Spark Operator's CRDs are not part of the Kubernetes
# schemas; their fields used here are checked against this structure (from the CRDs'
# documentation: monitoring.coreos.com/v1 ServiceMonitor and PrometheusRule,
# sparkoperator.k8s.io/v1beta2).
_OBJECT_META = {"type": "object", "required": ["name"], "properties": {"name": {"type": "string"}}}
CRD_SCHEMAS: dict[tuple[str, str], dict[str, Any]] = {
    ("monitoring.coreos.com/v1", "ServiceMonitor"): {
        "type": "object",
        "required": ["apiVersion", "kind", "metadata", "spec"],
        "properties": {
            "metadata": _OBJECT_META,
            "spec": {
                "type": "object",
                "additionalProperties": False,
                "required": ["selector", "endpoints"],
                "properties": {
                    "selector": {
                        "type": "object",
                        "properties": {"matchLabels": {"type": "object"}},
                    },
                    "endpoints": {
                        "type": "array",
                        "minItems": 1,
                        "items": {
                            "type": "object",
                            "additionalProperties": False,
                            "properties": {
                                "port": {"type": "string"},
                                "path": {"type": "string"},
                                "interval": {"type": "string", "pattern": r"^\d+[smh]$"},
                                "scrapeTimeout": {"type": "string", "pattern": r"^\d+[smh]$"},
                            },
                        },
                    },
                },
            },
        },
    },
    ("monitoring.coreos.com/v1", "PrometheusRule"): {
        "type": "object",
        "required": ["apiVersion", "kind", "metadata", "spec"],
        "properties": {
            "metadata": _OBJECT_META,
            "spec": {
                "type": "object",
                "additionalProperties": False,
                "required": ["groups"],
                "properties": {
                    "groups": {
                        "type": "array",
                        "minItems": 1,
                        "items": {
                            "type": "object",
                            "additionalProperties": False,
                            "required": ["name", "rules"],
                            "properties": {
                                "name": {"type": "string"},
                                "interval": {"type": "string", "pattern": r"^\d+[smh]$"},
                                "rules": {
                                    "type": "array",
                                    "minItems": 1,
                                    "items": {
                                        "type": "object",
                                        "additionalProperties": False,
                                        "required": ["expr"],
                                        "properties": {
                                            "alert": {"type": "string"},
                                            "record": {"type": "string"},
                                            "expr": {"type": "string"},
                                            "for": {"type": "string", "pattern": r"^\d+[smh]$"},
                                            "labels": {
                                                "type": "object",
                                                "additionalProperties": {"type": "string"},
                                            },
                                            "annotations": {
                                                "type": "object",
                                                "additionalProperties": {"type": "string"},
                                            },
                                        },
                                    },
                                },
                            },
                        },
                    }
                },
            },
        },
    },
    ("sparkoperator.k8s.io/v1beta2", "SparkApplication"): {
        "type": "object",
        "required": ["apiVersion", "kind", "metadata", "spec"],
        "properties": {
            "metadata": _OBJECT_META,
            "spec": {
                "type": "object",
                "additionalProperties": False,
                "required": ["type", "mode", "image", "mainApplicationFile", "sparkVersion"],
                "properties": {
                    "type": {"enum": ["Java", "Scala", "Python", "R"]},
                    "pythonVersion": {"enum": ["2", "3"]},
                    "mode": {"enum": ["cluster", "client"]},
                    "image": {"type": "string"},
                    "imagePullPolicy": {"enum": ["Always", "IfNotPresent", "Never"]},
                    "mainApplicationFile": {"type": "string", "pattern": "^local://"},
                    "arguments": {"type": "array", "items": {"type": "string"}},
                    "sparkVersion": {"type": "string"},
                    "sparkConf": {
                        "type": "object",
                        "additionalProperties": {"type": "string"},
                    },
                    "restartPolicy": {
                        "type": "object",
                        "additionalProperties": False,
                        "properties": {
                            "type": {"enum": ["Never", "Always", "OnFailure"]},
                            "onFailureRetries": {"type": "integer"},
                            "onFailureRetryInterval": {"type": "integer"},
                            "onSubmissionFailureRetries": {"type": "integer"},
                            "onSubmissionFailureRetryInterval": {"type": "integer"},
                        },
                    },
                    "driver": {"$ref": "#/$defs/pod"},
                    "executor": {"$ref": "#/$defs/pod"},
                },
            },
        },
        "$defs": {
            "pod": {
                "type": "object",
                "additionalProperties": False,
                "properties": {
                    "cores": {"type": "integer", "minimum": 1},
                    "memory": {"type": "string", "pattern": r"^\d+[mg]$"},
                    "instances": {"type": "integer", "minimum": 1},
                    "serviceAccount": {"type": "string"},
                    "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                },
            }
        },
    },
}


def _documents(path: Path) -> list[dict[str, Any]]:
    return [doc for doc in yaml.safe_load_all(path.read_text()) if doc]


def _validate(document: dict[str, Any], where: str) -> None:
    key = (document["apiVersion"], document["kind"])
    if key in CRD_SCHEMAS:
        jsonschema.validate(document, CRD_SCHEMAS[key])
        return
    try:
        kubernetes_validate.validate(document, K8S_VERSION, strict=True)
    except kubernetes_validate.ValidationError as exc:
        pytest.fail(f"{where}: {exc.message} at {list(exc.path)}")


MANIFESTS = sorted(
    p for p in K8S.rglob("*.yaml") if p.name != "kustomization.yaml" and p.name not in PATCHES
)


@pytest.mark.parametrize("path", MANIFESTS, ids=lambda p: str(p.relative_to(K8S)))
def test_manifest_is_valid(path: Path) -> None:
    documents = _documents(path)
    assert documents
    for document in documents:
        _validate(document, str(path.relative_to(ROOT)))


def test_crd_structure_check_is_not_a_rubber_stamp() -> None:
    monitor = _documents(K8S / "base" / "servicemonitor.yaml")[0]
    monitor["spec"]["endpoints"][0]["interval"] = "often"
    with pytest.raises(jsonschema.ValidationError):
        _validate(monitor, "servicemonitor")
    statefulset = _documents(K8S / "base" / "statefulset.yaml")[0]
    statefulset["spec"]["template"]["spec"]["containers"][0]["livenessProbe"]["httpGet"]["pth"] = 1
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(statefulset, K8S_VERSION, strict=True)


def _rendered(kustomization: Path) -> list[dict[str, Any]]:
    if shutil.which("kubectl") is None:
        pytest.skip("kubectl is not installed (apt package kubernetes-client)")
    done = subprocess.run(
        ["kubectl", "kustomize", str(kustomization)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return [doc for doc in yaml.safe_load_all(done.stdout) if doc]


@pytest.mark.parametrize("kustomization", KUSTOMIZATIONS, ids=lambda p: p.name)
def test_kustomize_renders_valid_objects(kustomization: Path) -> None:
    for document in _rendered(kustomization):
        _validate(document, f"{kustomization.name}: {document['kind']}")


def _by_kind(documents: list[dict[str, Any]], kind: str) -> dict[str, Any]:
    found = [d for d in documents if d["kind"] == kind]
    assert len(found) == 1, kind
    return found[0]


def _bridge_config(configmap: dict[str, Any], tmp_path: Path) -> Any:
    """The ConfigMap's destinations.yaml loaded by the bridge, with the Secret's files faked."""
    text = configmap["data"]["destinations.yaml"].replace(
        "/run/secrets/canal-bridge", str(tmp_path)
    )
    (tmp_path / "mysql-password").write_text("x\n")
    data = yaml.safe_load(text)
    return parse_config(data, source="configmap", environ={**os.environ, "POD_IP": "10.0.0.7"})


def test_base_wires_probes_config_secrets_and_resources(tmp_path: Path) -> None:
    documents = _rendered(K8S / "base")
    statefulset = _by_kind(documents, "StatefulSet")
    spec = statefulset["spec"]
    assert spec["replicas"] == 1
    pod = spec["template"]["spec"]
    container = pod["containers"][0]
    config = _bridge_config(_by_kind(documents, "ConfigMap"), tmp_path)
    assert config.meta.store == "file"
    # The admin endpoint on the pod IP, which the kubelet and Prometheus connect to.
    assert config.admin.listen == "10.0.0.7:11112"
    assert {e["name"]: e["valueFrom"]["fieldRef"]["fieldPath"] for e in container["env"]} == {
        "POD_IP": "status.podIP"
    }
    listen_port = int(config.admin.listen.rsplit(":", 1)[1])
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    assert ports["admin"] == listen_port
    assert container["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "admin"}
    assert container["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "admin"}
    assert container["resources"]["requests"] == {"cpu": "1", "memory": "512Mi"}
    assert container["resources"]["limits"]["memory"] == "512Mi"
    mounts = {m["name"]: m["mountPath"] for m in container["volumeMounts"]}
    assert str(config.meta.dir) == mounts["meta"]
    assert spec["volumeClaimTemplates"][0]["metadata"]["name"] == "meta"
    secret_volume = next(v for v in pod["volumes"] if v["name"] == "secrets")
    assert secret_volume["secret"]["secretName"] == "canal-bridge-secrets"
    assert config.destinations[0].source.password is not None  # from the Secret's file
    assert "password:" not in _by_kind(documents, "ConfigMap")["data"]["destinations.yaml"]
    assert pod["securityContext"]["runAsNonRoot"] is True
    service = _by_kind(documents, "Service")
    assert service["spec"]["ports"][0]["port"] == listen_port
    monitor = _by_kind(documents, "ServiceMonitor")
    assert monitor["spec"]["endpoints"][0]["port"] == service["spec"]["ports"][0]["name"]
    assert _by_kind(documents, "PodDisruptionBudget")["spec"]["maxUnavailable"] == 1
    assert not [d for d in documents if d["kind"] == "Secret"]  # created out of band


def test_ha_overlay_runs_replicas_with_zookeeper(tmp_path: Path) -> None:
    documents = _rendered(K8S / "overlays" / "ha")
    statefulset = _by_kind(documents, "StatefulSet")
    assert statefulset["spec"]["replicas"] >= 2
    container = statefulset["spec"]["template"]["spec"]["containers"][0]
    assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"  # kept from the base
    assert {e["name"] for e in container["env"]} == {"POD_IP"}
    config = _bridge_config(_by_kind(documents, "ConfigMap"), tmp_path)
    assert config.meta.store == "zookeeper"
    assert config.zookeeper is not None and config.zookeeper.hosts
    assert config.zookeeper.address == "10.0.0.7:11112"  # one address per pod


def _dockerfile_final_stage() -> dict[str, Any]:
    """USER, WORKDIR, ENTRYPOINT and CMD of the image's final stage (deploy/docker/Dockerfile)."""
    text = re.sub(r"\\\n", " ", (ROOT / "deploy" / "docker" / "Dockerfile").read_text())
    lines = [line.strip() for line in text.splitlines() if line.strip() and line[0] != "#"]
    last_from = max(i for i, line in enumerate(lines) if line.startswith("FROM "))
    found: dict[str, Any] = {}
    for line in lines[last_from:]:
        op, _, arg = line.partition(" ")
        found[op] = json.loads(arg) if op in ("ENTRYPOINT", "CMD") else arg
    return found


def test_statefulset_runs_the_built_image_as_it_expects() -> None:
    """deploy/docker/build.sh's image, loaded (its archive names it canal-bridge:<version>):
    its ENTRYPOINT (no command override), its CMD's config path mounted from the ConfigMap,
    its user, a writable meta volume and /tmp on a read-only root file system."""
    image = _dockerfile_final_stage()
    version = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    for kustomization in (K8S / "base", K8S / "overlays" / "ha"):
        pod = _by_kind(_rendered(kustomization), "StatefulSet")["spec"]["template"]["spec"]
        container = pod["containers"][0]
        assert container["image"] == f"canal-bridge:{version}"
        assert "command" not in container
        assert container["args"] == image["CMD"] and image["ENTRYPOINT"] == ["canal-bridge"]
        config_path = image["CMD"][image["CMD"].index("--config") + 1]
        mounts = {m["mountPath"]: m for m in container["volumeMounts"]}
        assert mounts[str(Path(config_path).parent)]["name"] == "config"
        assert mounts["/run/secrets/canal-bridge"]["readOnly"] is True
        assert mounts["/var/lib/canal-bridge/meta"]["name"] == "meta"
        assert "/tmp" in mounts
        assert container["securityContext"]["readOnlyRootFilesystem"] is True
        user, group = image["USER"].split(":")
        assert (pod["securityContext"]["runAsUser"], pod["securityContext"]["runAsGroup"]) == (
            int(user),
            int(group),
        )
        assert image["WORKDIR"] == "/var/lib/canal-bridge"
        # The bridge stops within 30 s of SIGTERM (the image's STOPSIGNAL).
        assert image["STOPSIGNAL"] == "SIGTERM" and pod["terminationGracePeriodSeconds"] > 30


def test_prometheus_rule_carries_the_plain_rules_file() -> None:
    rule = _documents(K8S / "base" / "prometheusrule.yaml")[0]
    plain = yaml.safe_load((ROOT / "deploy" / "monitoring" / "prometheus-rules.yaml").read_text())
    assert rule["spec"] == plain, (
        "edit deploy/k8s/base/prometheusrule.yaml and the rules file together"
    )
    rendered = _by_kind(_rendered(K8S / "base"), "PrometheusRule")
    assert rendered["spec"] == plain
