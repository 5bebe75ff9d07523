"""What a Temporal ``NOT_FOUND`` is about: the workflow, or the namespace.

Code that reads a task treats ``NOT_FOUND`` as "this workflow does not exist"
(an unknown task id, or one that closed between two calls). Temporal answers
``NOT_FOUND`` for a *namespace* too, and not only when the namespace is missing:
its namespace registry reports a lookup that timed out as "Namespace X is not
found" (``nsregistry/registry.go``, ``getNamespaceByNamePersistence``: "TODO: we
should return the actual error we got (e.g. timeout)"). A loaded server does
that to calls on a namespace that exists. Read as a missing workflow, it turned
a busy moment into wrong answers: ``tasks/get`` said the task did not exist,
``tasks/update`` dropped the answers as if the task had closed, and the quota
freed the slot of a running task. So a namespace's ``NOT_FOUND`` is Temporal being
unable to answer (``server.protocol.temporal_busy``), never a missing workflow.
"""

from __future__ import annotations

from temporalio.api.errordetails.v1 import NamespaceNotFoundFailure
from temporalio.service import RPCError, RPCStatusCode

_NAMESPACE_NOT_FOUND = NamespaceNotFoundFailure.DESCRIPTOR.full_name


def namespace_not_found(err: RPCError) -> bool:
    """Whether ``err`` is Temporal saying it could not find the *namespace*."""
    return err.status == RPCStatusCode.NOT_FOUND and any(
        detail.type_url.endswith(_NAMESPACE_NOT_FOUND) for detail in err.grpc_status.details
    )


def workflow_not_found(err: RPCError) -> bool:
    """Whether ``err`` says the workflow (or run) asked for does not exist."""
    return err.status == RPCStatusCode.NOT_FOUND and not namespace_not_found(err)
