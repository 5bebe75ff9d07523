"""A task in Temporal: starting it, reading its records, answering and watching it.

``engine.TaskEngine`` expresses the SEP-2663 operations as Temporal calls; the
other modules are its parts (the caller's fairness key and open-task quota too).
Nothing here knows about MCP requests (``protocol``) or about how Temporal is
reached (``temporal``).
"""
