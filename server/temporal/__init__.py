"""Temporal plumbing: reaching it, the worker plugin, versions, tracing, draining.

Also workflow tools: a Temporal workflow class registered as an MCP task tool.
"""
