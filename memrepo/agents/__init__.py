"""memrepo inside AI agents: Claude Code, Codex and Gemini hooks, their installation, and
the MCP server.

``harness`` is the adapter table (which event of which agent does what, and which output
keys each one accepts); ``events`` answers a hook call (briefing, recall, flush, capture),
failing open; ``install`` merges memrepo's hooks and MCP server into each agent's settings;
``mcp_server`` is the resident process a model calls for search, context and writes.
"""
