"""``deploy/k8s`` validates against dagster-k8s's config schemas; no cluster needed.

``run_config.k8s.yaml`` is checked as the run config of a job using ``k8s_job_executor`` (what each
step pod gets: image, namespace, resources, env); ``dagster.k8s.yaml``'s run launcher and run
coordinator sections are checked against the config schemas of their classes.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import dagster as dg
import dagster_k8s
import pytest
import yaml
from dagster._config import process_config

DEPLOY = Path(__file__).resolve().parents[2] / "deploy" / "k8s"
IMAGE = "ghcr.io/example/goodput:0.1.0"


def _yaml(name: str) -> dict[str, Any]:
    data = yaml.safe_load((DEPLOY / name).read_text(encoding="utf-8"))
    assert isinstance(data, dict)
    return data


@pytest.fixture(scope="module")
def executor_config() -> dict[str, Any]:
    """``run_config.k8s.yaml`` validated for a job on ``k8s_job_executor``, defaults filled."""

    @dg.asset(pool="duckdb")
    def probe() -> None:
        """A stand-in asset: the executor config does not depend on what the job does."""

    job = dg.define_asset_job("probe_job", executor_def=dagster_k8s.k8s_job_executor)
    defs = dg.Definitions(assets=[probe], jobs=[job])
    processed = dg.validate_run_config(
        defs.resolve_job_def("probe_job"), _yaml("run_config.k8s.yaml")
    )
    # The processed run config names the executor (``k8s``) instead of the ``config`` key.
    config = processed["execution"]["k8s"]
    assert isinstance(config, dict)
    return config


def test_step_pods_use_the_image_and_namespace(executor_config: dict[str, Any]) -> None:
    """Every step pod runs the goodput image in the goodput namespace."""
    assert executor_config["job_image"] == IMAGE
    assert executor_config["job_namespace"] == "goodput"
    assert executor_config["service_account_name"] == "goodput-runner"


def test_step_pods_request_resources(executor_config: dict[str, Any]) -> None:
    """Requests and limits per pod are set (the scheduler needs requests to pack nodes)."""
    assert executor_config["resources"] == {
        "requests": {"cpu": "1", "memory": "4Gi"},
        "limits": {"cpu": "2", "memory": "8Gi"},
    }


def test_step_pods_get_env_from_secrets_and_vars(executor_config: dict[str, Any]) -> None:
    """Credentials come from Secrets; the config path and lake URL are plain env vars."""
    assert set(executor_config["env_secrets"]) == {"goodput-lake-s3", "goodput-prometheus-auth"}
    env = dict(v.split("=", 1) for v in executor_config["env_vars"])
    assert env["GOODPUT_CONFIG"] == "/etc/goodput/goodput.toml"
    assert env["GOODPUT_LAKE_URL"].startswith("s3://")


def test_duckdb_steps_run_one_at_a_time(executor_config: dict[str, Any]) -> None:
    """Inside a run, steps in the duckdb pool are limited to one pod at a time."""
    assert {"key": "dagster/concurrency_key", "value": "duckdb", "limit": 1} in executor_config[
        "tag_concurrency_limits"
    ]


def test_run_launcher_config_is_valid() -> None:
    """The instance's K8sRunLauncher section passes the launcher's own config schema."""
    section = _yaml("dagster.k8s.yaml")["run_launcher"]
    assert (section["module"], section["class"]) == ("dagster_k8s", "K8sRunLauncher")
    result = process_config(dagster_k8s.K8sRunLauncher.config_type(), section["config"])
    assert result.success, result.errors
    assert result.value is not None
    assert result.value["job_image"] == IMAGE
    assert result.value["job_namespace"] == "goodput"
    assert "goodput-lake-s3" in result.value["env_secrets"]


def test_run_coordinator_limits_duckdb_writers() -> None:
    """The queued coordinator admits one warehouse-writing run at a time."""
    from dagster._core.run_coordinator import QueuedRunCoordinator

    section = _yaml("dagster.k8s.yaml")["run_coordinator"]
    result = process_config(QueuedRunCoordinator.config_type(), section["config"])
    assert result.success, result.errors
    assert result.value is not None
    limits = result.value["tag_concurrency_limits"]
    assert {"key": "goodput/writer", "value": "duckdb", "limit": 1} in limits
    assert _yaml("dagster.k8s.yaml")["concurrency"]["pools"]["default_limit"] == 1
