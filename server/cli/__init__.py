"""The ``fastmcp-temporal`` command (``main``) and one module per subcommand."""
