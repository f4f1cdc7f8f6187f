"""Extraction: transcripts -> knowledge files, through named, versioned extractors.

``extractors`` (what each finds, where it writes), ``heuristics`` (the offline path),
``apply`` (ADD / UPDATE / SUPERSEDE / NONE and the in-memory workspace), ``cache`` (LLM
results), ``runner`` (the ``memory extract`` run and its commit). The line format, source
references and the superseded marker live in :mod:`memrepo.entries`; transcripts are read
by :mod:`memrepo.transcript.read`.

The package imports nothing itself, so the MEMORY.md cap (:mod:`memrepo.lifecycle.cap`),
which uses ``apply``, can be imported by ``runner`` without a cycle.
"""
