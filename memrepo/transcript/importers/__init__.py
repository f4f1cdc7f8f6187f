"""Whole conversation logs from other tools into closed transcripts (``memory capture import``).

:mod:`.run` picks the format and imports a file; one module per format turns the file into
:class:`~memrepo.transcript.render.Conversation` objects (``parse(data, ctx)``):
:mod:`.claude_code`, :mod:`.anthropic_json`, :mod:`.openai_json`, :mod:`.chatgpt` and
:mod:`.text` (markdown); :mod:`._common` is what they share (building turns, tool lines,
session ids, timestamps).
"""
