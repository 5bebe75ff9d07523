"""Encryption: a Temporal client of your own that reads and writes encrypted task payloads.

The key comes from ``FASTMCP_TEMPORAL_ENCRYPTION_KEY``, as in every other process.
"""

# --8<-- [start:client]
from temporalio.client import Client

from fastmcp_temporal import task_data_converter


async def connect(address: str) -> Client:
    return await Client.connect(address, data_converter=task_data_converter())  # key from the env


# --8<-- [end:client]
