"""Recorded task histories (``*.json``, one folder per code generation): ``record.py``
writes them from a real dev server, ``catalog.py`` declares which exist (the paths
of ``paths.py`` and ``paths_v2.py``), ``replay.py`` loads and replays them,
``tests/test_replay.py`` is the gate. See CONTRIBUTING.md.

Kept free of imports: the workflow sandbox imports this package again for
``agent.py``'s workflow.
"""
