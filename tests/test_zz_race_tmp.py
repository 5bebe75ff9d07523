import time, pytest
from fastmcp_tasks import call_tool_task
from tests.test_encryption import front_and_worker, new_key
from fastmcp_temporal.server.engine import workflow_id_for


@pytest.mark.parametrize("i", range(6))
async def test_race(i, temporal_server, temporal_client, task_queue):
    async with front_and_worker(
        temporal_server.address,
        task_queue,
        creator_key=f"a:{new_key()}",
        worker_key=f"b:{new_key()}",
        legs_only=False,
    ) as (c, r, ran):
        t0 = time.monotonic()
        task = await call_tool_task(c, "echo", {"text": "secret"}, raise_on_error=False)
        s = await task.wait(timeout=60)
        print("RESULT", s.status, f"{time.monotonic() - t0:.1f}s")
        if time.monotonic() - t0 > 5:
            h = await temporal_client.get_workflow_handle(
                workflow_id_for(task.task_id, None)
            ).fetch_history()
            for ev in h.events:
                x = str(ev).replace("\n", " ")
                print(
                    "EV",
                    ev.event_time.ToDatetime().time(),
                    x[:250] if ev.event_type != 9 else x[:350],
                )
