"""How memrepo writes a commit of its own: one entry, the route decided once.

``write`` is the entry every writer calls (capture, remember, extraction, condensation)
and decides the route; ``trees`` builds the new trees for only the touched paths;
``inline`` runs the validators and the index update in-process and writes the commit with
git's plumbing; ``batch`` is ``memory commit`` (candidates, message, push); ``sync`` is
fetch, rebase and push.
"""
