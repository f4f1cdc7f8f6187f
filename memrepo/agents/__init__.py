"""memrepo inside AI agents: Claude Code, Codex and Gemini hooks, their installation, and
the MCP server.

- ``harness``: the adapter table (which event of which agent does what, which output keys
  each accepts, whether an injection stays in the conversation)
- ``events``: answers ``memory hook <agent> <Event>`` within a deadline, hands the slow
  work (flush, capture, end) to ``worker``, a detached process; fails open
- ``recall``: what a hook injects: the session's briefing and a prompt's recall
- ``worker``: the detached process and its work: capture, flush, close, judge, extract
- ``state``: the hooks' log, the passages a session has been shown, the doctor check
- ``settings``: where each agent keeps its hooks and MCP server, what memrepo's entries
  there look like
- ``install`` / ``settings_edit``: merging memrepo's entries into each agent's settings
  files and taking them out again, byte for byte
- ``mcp_server``: ``memory mcp``, the resident process a model calls for search, context,
  reads and writes
- ``mcp_http`` / ``tokens``: the same tools over streamable HTTP (``memory mcp --http``)
  behind bearer tokens, kept hashed per clone
"""
