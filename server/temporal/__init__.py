"""Temporal plumbing: reaching it, the worker and its plugins, versions, tracing, draining.

Also workflow tools (a Temporal workflow class registered as an MCP task tool)
and the plugin that gives them named connections to other MCP servers.
"""
