"""The embedded Temporal: a local dev server per data directory, and its keeper.

What ``TemporalTasks()`` with no address runs. Beneath the Temporal side, which
joins it; above ``core`` only.
"""
