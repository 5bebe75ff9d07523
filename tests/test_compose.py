"""``docker-compose.yml`` is a valid Compose file with the deployment the docs describe
(docs/guides/deploying.md).

There is no Docker engine here, so the file is validated the way Compose itself
reads it (``docker compose config``, or the standalone ``docker-compose``),
then the resolved services are checked: Temporal on PostgreSQL, the Web UI, the
one-shot search-attribute registration, a stateless MCP front end, two workers,
the codec server behind the ``encryption`` profile, MinIO as the payload
store of front end and workers (its bucket and lifecycle rule made by a one shot),
and Prometheus + Grafana on the metrics every process serves.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from fastmcp_temporal.server.core import metrics
from fastmcp_temporal.server.embedded import devserver

ROOT = Path(__file__).resolve().parent.parent


def compose_command() -> list[str] | None:
    docker = shutil.which("docker")
    if docker is not None:
        probe = subprocess.run([docker, "compose", "version"], capture_output=True, timeout=30)
        if probe.returncode == 0:
            return [docker, "compose"]
    standalone = shutil.which("docker-compose")
    return [standalone] if standalone else None


COMPOSE = compose_command()
pytestmark = pytest.mark.skipif(
    COMPOSE is None,
    reason="neither `docker compose` nor `docker-compose` is installed "
    "(Debian: apt-get install -y docker-compose; .ci/run does it)",
)


def resolved(*args: str) -> dict[str, Any]:
    assert COMPOSE is not None
    env = {k: v for k, v in os.environ.items() if not k.startswith("FASTMCP_TEMPORAL_")}
    done = subprocess.run(
        [*COMPOSE, "-f", str(ROOT / "docker-compose.yml"), *args, "config"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return yaml.safe_load(done.stdout)


def test_compose_file_validates_and_describes_the_deployment() -> None:
    services = resolved("--profile", "encryption")["services"]
    assert {
        "postgresql",
        "temporal",
        "temporal-ui",
        "search-attributes",
        "mcp-server",
        "worker-1",
        "worker-2",
        "codec-server",
    } <= set(services)
    assert services["postgresql"]["image"].startswith("postgres:")
    temporal = services["temporal"]
    assert temporal["image"].startswith("temporalio/auto-setup:")
    assert temporal["environment"]["DB"] == "postgres12"
    assert services["temporal-ui"]["image"].startswith("temporalio/ui:")

    registration = " ".join(services["search-attributes"]["command"])
    assert "McpToolName" in registration and "McpTaskStatus" in registration

    front_end = services["mcp-server"]
    assert front_end["environment"]["FASTMCP_TEMPORAL_RUN_WORKER"] == "false"
    assert front_end["depends_on"]["search-attributes"]["condition"] == (
        "service_completed_successfully"
    )
    for name in ("worker-1", "worker-2"):
        worker = services[name]
        assert worker["command"][:3] == ["fastmcp-temporal", "worker", "examples/demo_server.py"]
        assert worker["environment"]["TEMPORAL_ADDRESS"] == "temporal:7233"
        assert "FASTMCP_TEMPORAL_RUN_WORKER" not in worker["environment"]
    assert services["codec-server"]["command"][:2] == ["fastmcp-temporal", "codec-server"]
    assert (ROOT / "examples" / "demo_server.py").exists()


def test_front_end_and_workers_share_the_minio_payload_store() -> None:
    services = resolved()["services"]
    assert services["minio"]["image"].startswith("minio/minio:")
    bucket = services["payload-bucket"]
    assert bucket["depends_on"]["minio"]["condition"] == "service_healthy"
    setup = " ".join(bucket["command"])
    assert "mc mb --ignore-existing store/mcp-task-payloads" in setup
    assert "mc ilm rule add --expire-days" in setup, "blobs expire without anyone asking"
    for name in ("mcp-server", "worker-1", "worker-2"):
        service = services[name]
        environment = service["environment"]
        assert environment["FASTMCP_TEMPORAL_PAYLOAD_STORE"] == "s3://mcp-task-payloads"
        assert environment["AWS_ENDPOINT_URL"] == "http://minio:9000"
        assert (
            environment["AWS_ACCESS_KEY_ID"] == services["minio"]["environment"]["MINIO_ROOT_USER"]
        )
        assert service["depends_on"]["payload-bucket"]["condition"] == (
            "service_completed_successfully"
        )
    dockerfile = (ROOT / "Dockerfile").read_text()
    assert '".[s3]"' in dockerfile, "the image installs the S3 driver"


def test_the_codec_server_only_runs_with_the_encryption_profile() -> None:
    plain = resolved()["services"]
    assert "codec-server" not in plain or plain["codec-server"].get("profiles") == ["encryption"]


def test_prometheus_scrapes_every_process_and_grafana_has_the_dashboard() -> None:
    """Front end and workers serve /metrics on the port Prometheus scrapes; Grafana
    provisions the dashboard, whose queries use the metrics the code exports."""
    services = resolved()["services"]
    port = services["mcp-server"]["environment"]["FASTMCP_TEMPORAL_METRICS_PORT"]
    for name in ("mcp-server", "worker-1", "worker-2"):
        environment = services[name]["environment"]
        assert environment["FASTMCP_TEMPORAL_METRICS_PORT"] == port
        assert environment["FASTMCP_TEMPORAL_METRICS_HOST"] == "0.0.0.0"
    scrape = yaml.safe_load((ROOT / "prometheus" / "prometheus.yml").read_text())
    (job,) = scrape["scrape_configs"]
    (discovery,) = job["dns_sd_configs"]
    assert set(discovery["names"]) == {"mcp-server", "worker-1", "worker-2"}
    assert str(discovery["port"]) == port
    mounts = " ".join(str(v) for v in services["grafana"]["volumes"])
    assert "grafana/dashboards" in mounts and "grafana/provisioning" in mounts
    dashboard = json.loads((ROOT / "grafana" / "dashboards" / "fastmcp-temporal.json").read_text())
    queries = " ".join(
        target["expr"] for panel in dashboard["panels"] for target in panel.get("targets", [])
    )
    exported = {name.removesuffix("_total") for name in metrics.METRIC_NAMES}
    assert all(name in queries for name in exported), exported - set(queries.split())


def test_composed_temporal_runs_with_the_embedded_servers_dynamic_config() -> None:
    """Fairness, eager activities, cached search attributes, an unthrottled transfer
    queue: the cluster is configured as the dev server is."""
    temporal = resolved()["services"]["temporal"]
    version = temporal["image"].split(":")[1]
    assert tuple(int(part) for part in version.split(".")[:2]) >= (1, 29), "fairness needs 1.29"
    # `docker compose` resolves a volume to a mapping, the standalone v1 to "source:target:ro".
    mounts = [
        (v["source"], v["target"]) if isinstance(v, dict) else tuple(v.split(":")[:2])
        for v in temporal["volumes"]
    ]
    (source, target), *others = [m for m in mounts if m[0].endswith("dynamicconfig.yaml")]
    assert not others
    assert temporal["environment"]["DYNAMIC_CONFIG_FILE_PATH"] == (
        target.removeprefix("/etc/temporal/")
    )
    composed = yaml.safe_load(Path(source).read_text())
    embedded = {}
    for setting in (
        *devserver.FAIRNESS_DYNAMIC_CONFIG,
        *devserver.EAGER_DYNAMIC_CONFIG,
        *devserver.SEARCH_ATTRIBUTE_CACHE_DYNAMIC_CONFIG,
        *devserver.DISPATCH_DYNAMIC_CONFIG,
    ):
        name, value = setting.split("=", 1)
        embedded[name] = yaml.safe_load(value)
    assert {name: values[0]["value"] for name, values in composed.items()} == embedded
