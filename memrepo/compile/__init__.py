"""The context compiler (seed 000 §6): the smallest, densest prompt for the next model call.

Slots in priority order: P0 identity (always), P1 MEMORY.md / journals / active projects,
P2 activated topics and their subscriptions, P3 relevance-ranked passages from the index,
P4 session history newest first. :func:`memrepo.compile.compiler.compile_context` runs it.
"""

from __future__ import annotations

from memrepo.compile.compiler import Compiled, CompileRequest, compile_context
from memrepo.compile.sections import Section

__all__ = ["CompileRequest", "Compiled", "Section", "compile_context"]
