"""Operating at scale: the Prometheus endpoint, served while the server runs."""

from fastmcp_temporal import TemporalTasks

# --8<-- [start:metrics]
TemporalTasks(metrics_port=9464)  # or FASTMCP_TEMPORAL_METRICS_PORT=9464
# http://127.0.0.1:9464/metrics      FASTMCP_TEMPORAL_METRICS_HOST=0.0.0.0 in containers
# --8<-- [end:metrics]
