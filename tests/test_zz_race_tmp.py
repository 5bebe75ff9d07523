import time, asyncio, pytest
from fastmcp_tasks import call_tool_task
from tests.test_encryption import front_and_worker, new_key

@pytest.mark.parametrize("delay", [0.0]*8 + [1.0]*4)
async def test_race(delay, temporal_server, temporal_client, task_queue):
    async with front_and_worker(temporal_server.address, task_queue, creator_key=f"a:{new_key()}", worker_key=f"b:{new_key()}", legs_only=False) as (c, r, ran):
        t0=time.monotonic()
        task = await call_tool_task(c, "echo", {"text": "secret"}, raise_on_error=False)
        await asyncio.sleep(delay)
        s = await task.wait(timeout=60)
        print("RESULT", delay, s.status, f"{time.monotonic()-t0:.1f}s")
