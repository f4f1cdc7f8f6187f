"""What the importers share: building turns, tool lines, session ids, timestamps, and
the shape checks that turn a malformed log into an error naming the place in it."""

from __future__ import annotations

import base64
import binascii
import datetime as dt
import hashlib
import json
import math
import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from memrepo.documents import date_range_problem
from memrepo.secrets import redact
from memrepo.transcript.messages import plain_text
from memrepo.transcript.render import ATTACH, DraftTurn, redacted_line, tool_line


def digest(data: bytes | str) -> str:
    raw = data.encode("utf-8") if isinstance(data, str) else data
    return hashlib.sha256(raw).hexdigest()


def session_id(prefix: str, source_id: str) -> str:
    """A stable session id from the source's own id, so a re-import finds the first one."""
    return f"{prefix}-{digest(source_id)[:12]}"


class ShapeError(ValueError):
    """A log that parses but is not what its format says: ``where`` is the JSON path of the
    bad value (``messages[3].content``), ``line`` its line when the log has one per record."""

    def __init__(self, where: str, message: str, line: int | None = None) -> None:
        super().__init__(f"{where}: {message}" if where else message)
        self.where = where
        self.message = message
        self.line = line


#: Deeper than this, a log is refused: no chat format nests anywhere near it, and every
#: walker (rendering, redaction, JSON dumps) then stays far from Python's recursion limit.
MAX_DEPTH = 100


def check_depth(doc: Any, where: str = "", line: int | None = None) -> None:
    """Refuse a JSON value nested deeper than MAX_DEPTH, naming where it goes too deep.

    Iterative, so the check itself cannot overflow the stack."""
    stack: list[tuple[Any, str, int]] = [(doc, where, 1)]
    while stack:
        value, at, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise ShapeError(at or "$", f"nested deeper than {MAX_DEPTH} levels", line)
        if isinstance(value, dict):
            stack.extend((v, f"{at}.{k}" if at else str(k), depth + 1) for k, v in value.items()
                         if isinstance(v, (dict, list)))
        elif isinstance(value, list):
            stack.extend((v, f"{at}[{i}]", depth + 1) for i, v in enumerate(value)
                         if isinstance(v, (dict, list)))


def load_json(data: bytes) -> Any:
    """A whole-file JSON log, refused when nested deeper than any chat format goes
    (json.loads itself would overflow the stack a little further down)."""
    try:
        doc = json.loads(data)
    except RecursionError:
        raise too_deep(data) from None
    check_depth(doc)
    return doc


_JSON_TOKEN = re.compile(rb'"(?:[^"\\]|\\.)*"|[\[\]{}]')


def too_deep(data: bytes, line_offset: int = 0) -> ShapeError:
    """The error for a JSON text too deep for json.loads: it names the line and column
    where the nesting passes MAX_DEPTH (found by a scan of brackets outside strings)."""
    depth = 0
    for m in _JSON_TOKEN.finditer(data):
        tok = m.group()
        if tok in (b"[", b"{"):
            depth += 1
            if depth > MAX_DEPTH:
                line = data.count(b"\n", 0, m.start()) + 1
                col = m.start() - (data.rfind(b"\n", 0, m.start()) + 1) + 1
                return ShapeError(f"column {col}", f"nested deeper than {MAX_DEPTH} levels",
                                  line + line_offset)
        elif tok in (b"]", b"}"):
            depth -= 1
    return ShapeError("$", f"nested deeper than {MAX_DEPTH} levels")


def kind(value: Any) -> str:
    """A JSON value's type as a person reading the log would name it."""
    if value is None:
        return "null"
    return {bool: "true/false", int: "a number", float: "a number", str: "a string",
            list: "a list", dict: "an object"}.get(type(value), type(value).__name__)


def need_list(value: Any, where: str, line: int | None = None) -> list[Any]:
    """``value`` when it is a list (absent/null reads as empty), else a ShapeError."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise ShapeError(where, f"must be a list, got {kind(value)}", line)
    return value


def need_dict(value: Any, where: str, line: int | None = None) -> dict[str, Any]:
    """``value`` when it is an object (absent/null reads as empty), else a ShapeError."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ShapeError(where, f"must be an object, got {kind(value)}", line)
    return value


def need_str(value: Any, where: str, line: int | None = None, default: str = "") -> str:
    if value is None:
        return default
    if not isinstance(value, str):
        raise ShapeError(where, f"must be a string, got {kind(value)}", line)
    return value


def count(value: Any, where: str, line: int | None = None) -> int | None:
    """A token count: a whole number >= 0, or None when absent."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not (
            math.isfinite(value) and value >= 0 and value == int(value)):
        raise ShapeError(where, f"must be a whole number (0 or more), got {value!r}", line)
    return int(value)


def b64decode(data: Any, where: str, line: int | None = None) -> bytes:
    """Base64 bytes (an image, a document, audio), or a ShapeError naming the field."""
    if not isinstance(data, str):
        raise ShapeError(where, f"must be a base64 string, got {kind(data)}", line)
    try:
        return base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        raise ShapeError(where, "is not valid base64", line) from None


@contextmanager
def at(where: str, line: int | None = None) -> Iterator[None]:
    """Whatever goes wrong inside (a field of the wrong type deep in a block) is reported
    at ``where``: the place in the log, not a Python traceback."""
    try:
        yield
    except ShapeError as exc:
        if line is not None and exc.line is None:
            raise ShapeError(exc.where, exc.message, line) from None
        raise
    except RecursionError:
        raise ShapeError(where, f"nested deeper than {MAX_DEPTH} levels", line) from None
    except (TypeError, AttributeError, KeyError, IndexError, ValueError) as exc:
        raise ShapeError(where, f"unexpected shape ({_plain(exc)})", line) from None


def _plain(exc: BaseException) -> str:
    """'str' object has no attribute 'get' -> "a string where an object was expected"."""
    text = str(exc)
    m = re.match(r"'(\w+)' object (has no attribute|is not (iterable|subscriptable))", text)
    if m:
        names = {"str": "a string", "int": "a number", "float": "a number", "list": "a list",
                 "dict": "an object", "NoneType": "null", "bool": "true/false"}
        return f"{names.get(m[1], m[1])} where something else was expected"
    return text or type(exc).__name__


#: Epoch seconds at the end of LATEST (documents.date_range_problem's upper bound).
_EPOCH_MAX = 32503680000  # 3000-01-01T00:00:00Z


def timestamp(value: Any, where: str = "timestamp", line: int | None = None
              ) -> dt.datetime | None:
    """An aware datetime from an ISO 8601 string or epoch seconds (UTC when naive).

    None when absent (null or ""); anything else that is not a plausible time (NaN,
    1e20, negative epoch seconds, a word, a year outside 1900-2999) is a ShapeError: a
    log whose times are wrong is not imported with made-up ones.
    """
    if value is None or value == "":
        return None
    if isinstance(value, (bool, list, dict)):
        raise ShapeError(where, f"must be a time, got {kind(value)}", line)
    if isinstance(value, (int, float)):
        if not math.isfinite(value) or value < 0 or value >= _EPOCH_MAX:
            raise ShapeError(where, f"{value!r} is not a time (epoch seconds from 1970 to "
                                    "2999)", line)
        parsed = dt.datetime.fromtimestamp(float(value), dt.timezone.utc)
    else:
        s = str(value).strip()
        if s.endswith(("Z", "z")):
            s = s[:-1] + "+00:00"
        try:
            parsed = dt.datetime.fromisoformat(s)
        except ValueError:
            raise ShapeError(where, f"{value!r} is not an ISO 8601 time", line) from None
        why = date_range_problem(parsed)
        if why:
            raise ShapeError(where, why, line)
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=dt.timezone.utc)


_SALIENT = ("command", "file_path", "path", "pattern", "url", "query", "code", "description",
            "prompt", "notebook_path", "name")


def args_summary(args: Any, allowlist: Sequence[str] = ()) -> str:
    """The part of a tool call's arguments a reader needs, not the full JSON.

    Redacted before it is cut short, so a secret straddling the cut is still caught whole.
    """
    if isinstance(args, str):
        try:
            args = json.loads(args)
        except ValueError:
            return redacted_line(args, allowlist)[0]
    if isinstance(args, dict):
        for key in _SALIENT:
            if isinstance(args.get(key), str) and args[key].strip():
                return redacted_line(args[key], allowlist)[0]
        if not args:
            return ""
        compact = json.dumps(args, ensure_ascii=False, separators=(",", ":"))
        return redacted_line(compact, allowlist)[0]
    if args is None:
        return ""
    return redacted_line(json.dumps(args, ensure_ascii=False), allowlist)[0]


def result_summary(content: Any, is_error: bool = False, allowlist: Sequence[str] = ()) -> str:
    """First line of a tool result (and how long it was): the brief result of seed 000 §2.1.

    The whole result is redacted before its first line is taken and cut (a private key
    block spans lines).
    """
    text = redact(plain_text(content), allowlist)[0]
    lines = [ln for ln in text.split("\n") if ln.strip()]
    if not lines:
        return "error" if is_error else "ok"
    first = redacted_line(lines[0], allowlist, 120)[0]
    more = f" (+{len(lines) - 1} lines)" if len(lines) > 1 else ""
    return ("error: " if is_error else "") + first + more


def data_url(url: str, where: str = "url") -> tuple[bytes, str] | None:
    """(bytes, extension) of a ``data:`` URL, else None."""
    m = re.match(r"data:([\w.+-]+/[\w.+-]+)?(;base64)?,(.*)", url, re.S)
    if not m:
        return None
    raw = b64decode(m[3], where) if m[2] else m[3].encode("utf-8")
    return raw, _ext(m[1] or "application/octet-stream")


def _ext(media_type: str) -> str:
    sub = media_type.split("/")[-1].lower()
    sub = {"jpeg": "jpg", "svg+xml": "svg", "plain": "txt", "octet-stream": "bin"}.get(sub, sub)
    return safe_ext(sub)


def safe_ext(ext: Any) -> str:
    """A file extension a log names (a media type, an audio format), made safe for a file
    name: letters and digits only, short; ``bin`` when nothing is left."""
    clean = re.sub(r"[^A-Za-z0-9]", "", str(ext))[:10].lower()
    return clean or "bin"


def safe_name(name: str) -> str:
    """A file name from a log, kept inside attachments/: no folders, no leading dot."""
    base = re.split(r"[/\\]", str(name))[-1]
    clean = re.sub(r"[^\w.-]+", "_", base).lstrip(".")[:80]
    return clean or "attachment"


class Builder:
    """Turns in order: consecutive blocks of one role form a turn; tool results find their call.

    ``allowlist`` is the repo's secrets allowlist: tool lines are redacted here, before
    their parts are cut short (the renderer redacts whole blocks again, harmlessly).
    """

    def __init__(self, allowlist: Sequence[str] = ()) -> None:
        self.allowlist = tuple(allowlist)
        self.turns: list[DraftTurn] = []
        self.attachments: dict[str, bytes] = {}
        self._tools: dict[str, tuple[DraftTurn, int, str, str]] = {}

    def _turn(self, role: str, when: dt.datetime | None, new: bool = False) -> DraftTurn:
        if new or not self.turns or self.turns[-1].role != role:
            self.turns.append(DraftTurn(role, when))
        turn = self.turns[-1]
        if turn.when is None:
            turn.when = when
        return turn

    def text(self, role: str, text: str, when: dt.datetime | None = None) -> None:
        if text and text.strip():
            self._turn(role, when).blocks.append(text.strip("\n"))

    def new_turn(self, role: str, when: dt.datetime | None = None) -> None:
        """Start a new turn of ``role`` even if the last one has the same role."""
        if self.turns and self.turns[-1].role == role and self.turns[-1].blocks:
            self._turn(role, when, new=True)

    def tool_call(self, name: str, args: Any, call_id: str | None = None,
                  when: dt.datetime | None = None) -> None:
        turn = self._turn("agent", when)
        name = redact(name, self.allowlist)[0]
        summary = args_summary(args, self.allowlist)
        turn.blocks.append(tool_line(name, summary))
        if call_id:
            self._tools[call_id] = (turn, len(turn.blocks) - 1, name, summary)

    def tool_result(self, call_id: str | None, content: Any, is_error: bool = False,
                    name: str | None = None, when: dt.datetime | None = None) -> None:
        result = result_summary(content, is_error, self.allowlist)
        if call_id and call_id in self._tools:
            turn, index, tname, args = self._tools.pop(call_id)
            turn.blocks[index] = tool_line(tname, args, result)
        else:  # a result without its call: a line of its own
            tname = redact(name or "tool", self.allowlist)[0]
            self._turn("agent", when).blocks.append(tool_line(tname, "", result))

    def attach(self, role: str, name: str, data: bytes | None,
               when: dt.datetime | None = None) -> None:
        key = safe_name(name)
        if data is not None:
            key = f"{digest(data)[:8]}-{name}"
            self.attachments[key] = data
        self._turn(role, when).blocks.append(ATTACH + key)

    def reference(self, role: str, target: str, when: dt.datetime | None = None) -> None:
        """An attachment that lives elsewhere (a URL): referenced, never fetched."""
        target = redacted_line(target, self.allowlist, 300)[0]
        self._turn(role, when).blocks.append(f"> [attachment:{target}]")
