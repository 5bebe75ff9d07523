"""The shared vocabulary every part below the extension speaks.

The wire shapes of SEP-2663 (``wire``), whose task it is (``scope``), how a task looks
in Temporal (``visibility``), how its payloads are sealed (``codec``), every
environment variable read (``settings``), and the instruments every part counts
with (``metrics``). It imports no other part of ``server/``;
every part may import it.
"""
