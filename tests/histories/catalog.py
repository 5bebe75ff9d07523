"""Every declared path of every code generation: what the recorder writes and the gate expects.

Generation 1 (``paths.FIRST_GENERATION``) sits at the top of ``tests/histories``;
each later generation in its own folder (``v2/`` to ``v7/``), so a file's path says which
workflow code recorded it (see CONTRIBUTING.md, "Recording histories").
"""

from __future__ import annotations

from tests.histories.agent import AskingAgent, FailingAgent
from tests.histories.harness import TaskPath
from tests.histories.paths import FIRST_GENERATION
from tests.histories.paths_v2 import SECOND_GENERATION
from tests.histories.paths_v3 import THIRD_GENERATION
from tests.histories.paths_v4 import FOURTH_GENERATION
from tests.histories.paths_v5 import FIFTH_GENERATION
from tests.histories.paths_v6 import SIXTH_GENERATION
from tests.histories.paths_v7 import SEVENTH_GENERATION

PATHS: tuple[TaskPath, ...] = (
    FIRST_GENERATION
    + SECOND_GENERATION
    + THIRD_GENERATION
    + FOURTH_GENERATION
    + FIFTH_GENERATION
    + SIXTH_GENERATION
    + SEVENTH_GENERATION
)
#: The workflow tools' classes, which replaying their ``.body`` histories needs.
WORKFLOW_TOOL_CLASSES: tuple[type, ...] = (AskingAgent, FailingAgent)
#: Every history file the gate expects, and those sealed with the test key.
FILES: tuple[str, ...] = tuple(file for path in PATHS for file in path.files)
ENCRYPTED_FILES: frozenset[str] = frozenset(
    f for path in PATHS if path.encrypted for f in path.files
)
#: The payload store (a directory under ``tests/histories``) each file's replay needs.
PAYLOAD_STORES: dict[str, str] = {
    f: path.payload_store for path in PATHS if path.payload_store for f in path.files
}
