"""What goes into the next prompt (seed 000 §6, seed 002): the smallest, densest context.

Slots in priority order: P0 identity (always), P1 MEMORY.md / journals / active projects,
P2 activated topics and their subscriptions, P3 relevance-ranked passages from the index,
P4 session history newest first. :func:`memrepo.context.compiler.compile_context` runs it.

Modules: ``compiler`` (the slots and the budget), ``sections`` (P0–P2 text), ``retrieve``
(P3 from the index), ``tokens`` (estimates), ``trim`` (smart trim of a message list) and
``watchers/`` (which topics a message activates). Importing this package imports none of
them, so a hook that needs only the watchers pays for nothing else.
"""
