"""Testing: the ``conftest.py`` of a project that tests its task tools."""

# --8<-- [start:conftest]
# conftest.py
from fastmcp_temporal.client import enable_transparent_tasks

pytest_plugins = ["fastmcp_temporal.testing"]

enable_transparent_tasks()  # every Client in the tests declares the tasks extension
# --8<-- [end:conftest]
