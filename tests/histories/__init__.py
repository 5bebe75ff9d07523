"""Recorded task histories (``*.json``): ``record.py`` writes them from a real dev
server, ``paths.py`` declares which exist, ``replay.py`` loads and replays them,
``tests/test_replay.py`` is the gate. See CONTRIBUTING.md.

Kept free of imports: the workflow sandbox imports this package again for
``agent.py``'s workflow.
"""
