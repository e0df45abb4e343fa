"""``deploy/k8s`` manifests: valid Kubernetes objects, consistent with the Dagster instance.

No cluster runs here, so every object is checked against the Kubernetes OpenAPI schemas that
``kubernetes-validate`` bundles (strict: unknown fields fail), and every name the instance, the
run config and the Deployments refer to (Secrets, ConfigMaps, the PVC, the service account) is
checked to be one of the shipped objects.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType
from typing import Any

import dagster as dg
import dagster_k8s
import kubernetes_validate
import pytest
import yaml

DEPLOY = Path(__file__).resolve().parents[2] / "deploy" / "k8s"
K8S_VERSION = "1.30"
IMAGE = "ghcr.io/example/goodput:0.1.0"
MANIFEST_FILES = [*sorted((DEPLOY / "manifests").glob("*.yaml")), DEPLOY / "secrets.example.yaml"]


def _render_module() -> ModuleType:
    spec = importlib.util.spec_from_file_location("goodput_k8s_render", DEPLOY / "render.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _docs(path: Path) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(path.read_text(encoding="utf-8")) if d is not None]


@pytest.fixture(scope="module")
def objects() -> dict[tuple[str, str], dict[str, Any]]:
    """Every shipped object by (kind, name)."""
    out: dict[tuple[str, str], dict[str, Any]] = {}
    for path in MANIFEST_FILES:
        for doc in _docs(path):
            key = (doc["kind"], doc["metadata"]["name"])
            assert key not in out, f"{key} defined twice"
            out[key] = doc
    return out


@pytest.mark.parametrize("path", MANIFEST_FILES, ids=lambda p: p.name)
def test_manifests_validate_against_the_kubernetes_schemas(path: Path) -> None:
    """Each document of each file passes the Kubernetes 1.30 schema of its kind, strictly."""
    docs = _docs(path)
    assert docs
    for doc in docs:
        kubernetes_validate.validate(doc, K8S_VERSION, strict=True)


def test_the_validator_rejects_a_bad_manifest() -> None:
    """The check is not vacuous: a misspelt field and a string replica count both fail."""
    docs = _docs(DEPLOY / "manifests" / "dagster.yaml")
    deployment = next(d for d in docs if d["kind"] == "Deployment")
    misspelt = yaml.safe_load(yaml.safe_dump(deployment))
    misspelt["spec"]["template"]["spec"]["containers"][0]["imagePullPolicyy"] = "Always"
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(misspelt, K8S_VERSION, strict=True)
    wrong_type = yaml.safe_load(yaml.safe_dump(deployment))
    wrong_type["spec"]["replicas"] = "one"
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(wrong_type, K8S_VERSION, strict=True)


def test_rendered_config_maps_are_up_to_date() -> None:
    """``manifests/configmaps.yaml`` is what ``render.py`` makes of today's files."""
    render = _render_module()
    assert (DEPLOY / "manifests" / "configmaps.yaml").read_text(encoding="utf-8") == render.render()


def test_cluster_config_puts_the_warehouse_on_the_volume() -> None:
    """The ConfigMap's goodput.toml keeps every setting but moves the warehouse paths to /data."""
    import tomllib

    render = _render_module()
    repo = tomllib.loads((DEPLOY.parents[1] / "goodput.toml").read_text(encoding="utf-8"))
    cluster = tomllib.loads(render.cluster_toml((DEPLOY.parents[1] / "goodput.toml").read_text()))
    assert cluster["warehouse"]["path"] == "/data/warehouse.duckdb"
    assert cluster["warehouse"]["serving_path"] == "/data/serving.duckdb"
    assert cluster["warehouse"]["inputs"] == "/data/inputs"
    moved = set(render.WAREHOUSE_PATHS)
    assert {k: v for k, v in cluster["warehouse"].items() if k not in moved} == {
        k: v for k, v in repo["warehouse"].items() if k not in moved
    }
    assert {k: v for k, v in cluster.items() if k != "warehouse"} == {
        k: v for k, v in repo.items() if k != "warehouse"
    }


def test_instance_config_map_is_the_k8s_instance(objects: dict[tuple[str, str], Any]) -> None:
    """The instance ConfigMap carries dagster.k8s.yaml: the K8sRunLauncher and its settings."""
    data = objects[("ConfigMap", "goodput-dagster-instance")]["data"]
    instance = yaml.safe_load(data["dagster.yaml"])
    assert instance == yaml.safe_load((DEPLOY / "dagster.k8s.yaml").read_text(encoding="utf-8"))
    assert instance["run_launcher"]["class"] == "K8sRunLauncher"
    assert instance["run_launcher"]["config"]["instance_config_map"] == "goodput-dagster-instance"


def test_everything_the_launcher_and_executor_name_is_shipped(
    objects: dict[tuple[str, str], Any],
) -> None:
    """Secrets, ConfigMaps, PVC and service account named by the launcher and the run config
    exist, and the lake's credentials reach the pods from the ``goodput-lake-s3`` Secret."""
    launcher = yaml.safe_load((DEPLOY / "dagster.k8s.yaml").read_text())["run_launcher"]["config"]
    executor = yaml.safe_load((DEPLOY / "run_config.k8s.yaml").read_text())["execution"]["config"]
    for cfg in (launcher, executor):
        assert "goodput-lake-s3" in cfg["env_secrets"]
        for secret in cfg["env_secrets"]:
            assert ("Secret", secret) in objects
        assert ("ServiceAccount", cfg["service_account_name"]) in objects
        assert cfg["job_image"] == IMAGE
        assert any(v.startswith("GOODPUT_LAKE_URL=") for v in cfg["env_vars"])
    assert ("Secret", launcher["postgres_password_secret"]) in objects
    for volume in launcher["volumes"]:
        if "configMap" in volume:
            assert ("ConfigMap", volume["configMap"]["name"]) in objects
        if "persistentVolumeClaim" in volume:
            claim = volume["persistentVolumeClaim"]["claimName"]
            assert ("PersistentVolumeClaim", claim) in objects
    lake_keys = set(objects[("Secret", "goodput-lake-s3")]["stringData"])
    assert {"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"} <= lake_keys


def test_deployments_mount_only_shipped_objects(objects: dict[tuple[str, str], Any]) -> None:
    """Webserver, daemon and code location run the image, and every ConfigMap, Secret and PVC
    they mount or read exists; the code location serves ``pipelines.definitions``."""
    deployments = {name: doc for (kind, name), doc in objects.items() if kind == "Deployment"}
    assert set(deployments) == {"goodput-code", "goodput-webserver", "goodput-daemon"}
    for doc in deployments.values():
        pod = doc["spec"]["template"]["spec"]
        assert ("ServiceAccount", pod["serviceAccountName"]) in objects
        for volume in pod["volumes"]:
            if "configMap" in volume:
                assert ("ConfigMap", volume["configMap"]["name"]) in objects
            if "persistentVolumeClaim" in volume:
                claim = volume["persistentVolumeClaim"]["claimName"]
                assert ("PersistentVolumeClaim", claim) in objects
        for container in pod["containers"]:
            assert container["image"] == IMAGE
            for source in container.get("envFrom", []):
                assert ("Secret", source["secretRef"]["name"]) in objects
            for var in container.get("env", []):
                ref = var.get("valueFrom", {}).get("secretKeyRef")
                if ref:
                    assert ref["key"] in objects[("Secret", ref["name"])]["stringData"]
    code = deployments["goodput-code"]["spec"]["template"]["spec"]["containers"][0]
    assert code["command"][:5] == ["dagster", "api", "grpc", "-m", "pipelines.definitions"]
    data = objects[("ConfigMap", "goodput-workspace")]["data"]
    workspace = yaml.safe_load(data["workspace.yaml"])
    server = workspace["load_from"][0]["grpc_server"]
    assert ("Service", server["host"]) in objects
    assert objects[("Service", server["host"])]["spec"]["ports"][0]["port"] == server["port"]


def test_run_config_executor_is_k8s_job_executor() -> None:
    """``run_config.k8s.yaml`` is a valid run config of a job on ``k8s_job_executor`` (the
    processed config names the executor ``k8s``), so each step runs in its own pod."""

    @dg.asset(partitions_def=dg.DailyPartitionsDefinition(start_date="2024-01-01"))
    def probe() -> None:
        """A partitioned stand-in asset: the executor config does not depend on it."""

    job = dg.define_asset_job("probe_job", executor_def=dagster_k8s.k8s_job_executor)
    defs = dg.Definitions(assets=[probe], jobs=[job])
    config = yaml.safe_load((DEPLOY / "run_config.k8s.yaml").read_text(encoding="utf-8"))
    processed = dg.validate_run_config(defs.resolve_job_def("probe_job"), config)
    assert list(processed["execution"]) == ["k8s"]
    assert processed["execution"]["k8s"]["job_namespace"] == "goodput"
