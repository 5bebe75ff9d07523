"""Operating at scale: fairness keys, so one caller's backlog does not delay the others."""

# --8<-- [start:fairness]
from fastmcp_temporal import FairnessCaller, TemporalTasks

PAYING = {"acme-prod", "globex"}  # your paying clients' ids

TemporalTasks()  # on: one key per caller scope, weight 1
TemporalTasks(fairness=False)  # off; or FASTMCP_TEMPORAL_FAIRNESS=false


def by_plan(caller: FairnessCaller) -> tuple[str, float] | None:
    if caller.client_id is None:
        return None  # the default: the caller's scope, weight 1
    return caller.client_id, 5.0 if caller.client_id in PAYING else 1.0


TemporalTasks(fairness=by_plan)  # your own keys and weights
# --8<-- [end:fairness]
