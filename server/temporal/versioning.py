"""Worker versioning: each deploy is a Temporal Worker Deployment Version.

```python
TemporalTasks(versioning=WorkerVersioning("mcp-tasks", build_id="2026-11-30.1"))
```

or, as the Temporal Worker Controller sets them on every worker pod,
``TEMPORAL_DEPLOYMENT_NAME`` + ``TEMPORAL_WORKER_BUILD_ID`` (or
``fastmcp-temporal worker --deployment-name ... --build-id ...``).

A versioned worker polls as ``<deployment>.<build id>``; Temporal starts new
tasks on the deployment's *current* version (``temporal worker deployment
set-current-version``) and keeps a task's workflow tasks on the version it
started on: task workflows default to ``PINNED``. That fits MCP tasks, whose
life is bounded (``ttlMs`` + 1 min, Temporal's execution timeout spans every
continue-as-new), so an old build only has to stay up until its last pinned
task ends, and workflow code never meets a history another build wrote.
Within a pinned task everything stays on its version: each leg (on the task's
queue, and on another queue that workers of the same version poll), local
legs (they run in the workflow's own worker), a workflow tool's child workflow
and a continue-as-new run.

Only workers carry a version: a front end (``run_worker=False``) only starts
workflows, which Temporal routes to the current version. Without a deployment
name and build id nothing changes: workers are unversioned, as before. Tasks in
flight on unversioned workers are not pinned: they move to the first version
made current, which must therefore replay their histories.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from temporalio.common import VersioningBehavior, WorkerDeploymentVersion
from temporalio.worker import WorkerDeploymentConfig

from fastmcp_temporal.server.core.settings import env_var, load_settings

#: The names the Temporal Worker Controller injects into versioned worker pods.
DEPLOYMENT_NAME_ENV = env_var("deployment_name")
BUILD_ID_ENV = env_var("worker_build_id")

#: The command-line spellings of the two behaviours a task workflow may have.
BEHAVIORS: Mapping[str, VersioningBehavior] = {
    "pinned": VersioningBehavior.PINNED,
    "auto-upgrade": VersioningBehavior.AUTO_UPGRADE,
}


@dataclass(frozen=True)
class WorkerVersioning:
    """A worker's Deployment Version and the default behaviour of the workflows it runs.

    Args:
        deployment_name: The Worker Deployment (one per fleet serving a task
            queue, e.g. the server's name); no ``.`` in it (Temporal's
            ``<deployment>.<build id>`` notation splits on the first dot).
        build_id: This build (an image tag, a git SHA): a new one per deploy.
        default_behavior: ``PINNED`` (default): a task stays on the build that
            started it. ``AUTO_UPGRADE``: a task moves to the current version at
            its next workflow task, so the new build must replay the old one's
            histories (``workflow.patched``). A workflow tool that declares its
            own ``versioning_behavior`` keeps it.
    """

    deployment_name: str
    build_id: str
    default_behavior: VersioningBehavior = VersioningBehavior.PINNED

    def __post_init__(self) -> None:
        if not self.deployment_name or "." in self.deployment_name:
            raise ValueError(
                f"Worker deployment name {self.deployment_name!r} must be non-empty, without '.'"
            )
        if not self.build_id:
            raise ValueError("A versioned worker needs a build id")
        if self.default_behavior == VersioningBehavior.UNSPECIFIED:
            # The task workflows declare no behaviour of their own: the worker's
            # default is theirs, and Temporal rejects a versioned workflow without one.
            raise ValueError("default_behavior must be PINNED or AUTO_UPGRADE")

    @property
    def version(self) -> WorkerDeploymentVersion:
        return WorkerDeploymentVersion(self.deployment_name, self.build_id)

    def deployment_config(self) -> WorkerDeploymentConfig:
        """The ``Worker(deployment_config=...)`` of this version."""
        return WorkerDeploymentConfig(
            version=self.version,
            use_worker_versioning=True,
            default_versioning_behavior=self.default_behavior,
        )

    def describe(self) -> str:
        """For logs: ``deployment.build (pinned)``."""
        behavior = next(name for name, b in BEHAVIORS.items() if b == self.default_behavior)
        return f"{self.version.to_canonical_string()} ({behavior})"

    @classmethod
    def resolve(
        cls,
        *,
        deployment_name: str | None = None,
        build_id: str | None = None,
        default_behavior: VersioningBehavior = VersioningBehavior.PINNED,
    ) -> WorkerVersioning | None:
        """Arguments first, then ``TEMPORAL_DEPLOYMENT_NAME`` / ``TEMPORAL_WORKER_BUILD_ID``.

        Neither set: ``None`` (unversioned). Only one of them: an error, since a
        half-configured fleet would silently run unversioned.
        """
        configured = load_settings()
        deployment_name = deployment_name or configured.deployment_name
        build_id = build_id or configured.worker_build_id
        if deployment_name is None and build_id is None:
            return None
        if deployment_name is None or build_id is None:
            raise ValueError(
                "Worker versioning needs both a deployment name and a build id "
                f"({DEPLOYMENT_NAME_ENV} / {BUILD_ID_ENV}, or --deployment-name / --build-id); "
                f"got deployment name {deployment_name!r}, build id {build_id!r}"
            )
        return cls(deployment_name, build_id, default_behavior)
