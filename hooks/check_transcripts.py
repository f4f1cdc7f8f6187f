"""Check conversation transcripts: their shape, and that history stays as it happened.

A transcript is raw evidence (seed 000 §2.1, DESIGN.md "raw/ is immutable"). Its path must
agree with its frontmatter (``HHMM`` in the session's own time zone), its turn headers must
parse, and against HEAD: a closed transcript (``ended`` set) never changes, an open one
only grows (body append-only; frontmatter outside TRANSCRIPT_MUTABLE_FIELDS kept, and no
other key added), and no transcript is deleted or renamed.

Git cost is fixed per commit: one ``git diff --cached`` limited to raw/conversations/ (for
the deletions and renames pre-commit never passes) and one ``git cat-file --batch`` for
the HEAD versions of the staged transcripts, whatever their number.
"""

from __future__ import annotations

from collections.abc import Sequence

from memrepo import documents, git, gitcrypt, layout
from memrepo.errors import FormatError

from .check_frontmatter import date_value, line_of, require_fields, require_frontmatter
from .engine import BlobContext, Context, run_main

CHECK_ID = "check-transcripts"
#: Malformed turn headers reported per file before the rest are summed up.
MAX_HEADER_ERRORS = 10

_MUTABLE = ", ".join(sorted(documents.TRANSCRIPT_MUTABLE_FIELDS))
_RESTORE = "restore it with: git restore --staged --worktree --source=HEAD -- {path}"


def first_diff_line(old: str, new: str) -> int:
    """1-based line of ``new`` where it stops agreeing with ``old``."""
    old_lines, new_lines = old.split("\n"), new.split("\n")
    for i, (a, b) in enumerate(zip(old_lines, new_lines, strict=False)):
        if a != b:
            return i + 1
    return min(len(old_lines), len(new_lines)) + (0 if len(new_lines) < len(old_lines) else 1)


def check_shape(path: str, ctx: Context) -> None:
    """Path, required fields, started/path agreement and turn headers of one transcript."""
    report = ctx.report
    m = layout.TRANSCRIPT_PATH.match(path)
    if m is None:
        report.error(
            path,
            None,
            "transcript path must be raw/conversations/YYYY/MM/DD/HHMM-<session_id>-<slug>.md",
            CHECK_ID,
        )
    doc = ctx.document(path, CHECK_ID)
    text = ctx.text(path, CHECK_ID)
    if doc is None or text is None or not require_frontmatter(ctx, doc, CHECK_ID):
        return
    meta = doc.meta
    require_fields(ctx, path, text, meta, "conversation", CHECK_ID)
    sid = meta.get("session_id")
    if sid is not None and not (isinstance(sid, str) and layout.SLUG.match(sid)):
        report.error(
            path,
            line_of(text, "session_id"),
            "session_id must be a string of letters, digits, '.', '_' or '-'",
            CHECK_ID,
        )
        sid = None
    if m is not None and sid:
        rest = m["rest"]
        slug = rest[len(sid) + 1 :] if rest.startswith(sid + "-") else ""
        if not layout.SLUG.match(slug):
            report.error(
                path,
                line_of(text, "session_id"),
                f"file name must be HHMM-{sid}-<slug>.md (the frontmatter's session_id, then a "
                "slug of letters, digits, '.', '_' or '-')",
                CHECK_ID,
            )
    started = date_value(ctx, path, text, meta, "started", CHECK_ID)
    ended = date_value(ctx, path, text, meta, "ended", CHECK_ID)
    if m is not None and started is not None:
        named = f"{m['y']}/{m['m']}/{m['d']}/{m['hh']}{m['mm']}"
        own = f"{started:%Y/%m/%d/%H%M}"
        if named != own:
            report.error(
                path,
                line_of(text, "started"),
                f"path says {named} but started is {started.isoformat()}: the path must use "
                f"started in its own time zone ({own})",
                CHECK_ID,
            )
    if started is not None and ended is not None and ended < started:
        report.error(path, line_of(text, "ended"), "'ended' is before 'started'", CHECK_ID)
    bad = 0
    for i, line in enumerate(doc.body.split("\n")):
        if layout.TURN_HEADER_LIKE.match(line) and not layout.TURN_HEADER.match(line):
            bad += 1
            if bad <= MAX_HEADER_ERRORS:
                report.error(
                    path,
                    doc.body_line + i,
                    "turn header must be '## HH:MM — user|agent|system' (24-hour time, an em "
                    "dash; ' [memory]' may follow agent only)",
                    CHECK_ID,
                )
    if bad > MAX_HEADER_ERRORS:
        report.error(
            path, None, f"{bad - MAX_HEADER_ERRORS} more malformed turn headers", CHECK_ID
        )


def _doc(data: bytes, path: str) -> documents.Document | None:
    try:
        return documents.parse_document(documents.decode(data, path), path)
    except FormatError:
        return None


def check_history(path: str, old: bytes, new: bytes, ctx: Context) -> None:
    """Compare a staged transcript with its HEAD version."""
    report = ctx.report
    # A work tree's CRLF (a Windows checkout) is not a change: git stores LF on add
    # (.gitattributes eol=lf). Blobs (a pushed commit's, the index's) are what history
    # holds: compared to the byte, so a transcript re-committed with CRLF is a rewrite.
    crlf = b"\r\n" in new and not isinstance(ctx, BlobContext)
    if crlf:
        old, new = old.replace(b"\r\n", b"\n"), new.replace(b"\r\n", b"\n")
    if old == new:
        return
    eol = (" (its line endings changed: only its bytes as committed count)"
           if old.replace(b"\r\n", b"\n") == new.replace(b"\r\n", b"\n") else "")
    old_doc = _doc(old, path)
    if old_doc is None:  # HEAD's copy is broken (committed with --no-verify): bytes only grow
        if not new.startswith(old):
            line = first_diff_line(old.decode("utf-8", "replace"), new.decode("utf-8", "replace"))
            report.error(
                path, line, f"a committed transcript may only grow; this line was changed{eol}",
                CHECK_ID)
        return
    if old_doc.meta.get("ended") is not None:
        line = first_diff_line(old.decode("utf-8", "replace"), new.decode("utf-8", "replace"))
        report.error(
            path,
            line,
            f"transcript is closed in HEAD (it has 'ended') and may not change{eol}; "
            + _RESTORE.format(path=path),
            CHECK_ID,
        )
        return
    new_doc = _doc(new, path) if crlf else ctx.document(path, CHECK_ID)
    text = ctx.text(path, CHECK_ID)
    if new_doc is None or text is None:
        return  # unreadable now: already reported
    if not new_doc.body.startswith(old_doc.body):
        line = new_doc.body_line - 1 + first_diff_line(old_doc.body, new_doc.body)
        report.error(
            path,
            line,
            f"an open transcript may only grow: this line differs from HEAD{eol} (the body "
            "is append-only; add new turns at the end)",
            CHECK_ID,
        )
    for key, value in old_doc.meta.items():
        if key in documents.TRANSCRIPT_MUTABLE_FIELDS:
            continue
        if key not in new_doc.meta:
            report.error(
                path,
                1,
                f"frontmatter '{key}' was removed; only {_MUTABLE} may change while a "
                "transcript is open",
                CHECK_ID,
            )
        elif new_doc.meta[key] != value:
            report.error(
                path,
                line_of(text, str(key)),
                f"frontmatter '{key}' changed from HEAD; only {_MUTABLE} may change while a "
                "transcript is open",
                CHECK_ID,
            )
    # A key HEAD does not have is as much a rewrite of what was recorded as a changed one.
    for key in new_doc.meta:
        if key not in old_doc.meta and key not in documents.TRANSCRIPT_MUTABLE_FIELDS:
            report.error(
                path,
                line_of(text, str(key)),
                f"frontmatter '{key}' was added; only {_MUTABLE} may be added while a "
                "transcript is open",
                CHECK_ID,
            )


def check(paths: Sequence[str], ctx: Context) -> None:
    """Shape of the named transcripts; history of every staged one; no deletes or renames."""
    named = [p for p in paths if layout.is_transcript(p)]
    staged: list[str] = []
    for status, path, new_path in ctx.staged_status(layout.TRANSCRIPT_ROOT):
        if not layout.is_transcript(path):
            continue  # .gitkeep and the like
        if status == "D":
            ctx.report.error(
                path,
                None,
                "transcripts may not be deleted (raw/ is append-only evidence); "
                + _RESTORE.format(path=path),
                CHECK_ID,
            )
        elif status == "R":
            ctx.report.error(
                path,
                None,
                f"transcripts may not be renamed or moved (staged as a rename to {new_path}); "
                f"move it back with: git mv {new_path} {path}",
                CHECK_ID,
            )
        elif status == "T":
            ctx.report.error(
                path, None, "a transcript may not be replaced by a symlink or submodule", CHECK_ID
            )
        elif status in ("A", "M"):
            staged.append(path)
    for path in named:
        if (ctx.root / path).is_symlink():
            ctx.report.error(path, None, "a transcript must be a file, not a symlink", CHECK_ID)
        else:
            check_shape(path, ctx)
    current: dict[str, bytes] = {}
    for path in dict.fromkeys([*named, *staged]):
        data = ctx.data(path, CHECK_ID)
        if data is not None and "\n" not in path:
            current[path] = data
    if not current:
        return
    committed = gitcrypt.reveal_all(  # one process; a git-crypt blob through the key
        ctx.root, git.read_blobs(ctx.root, [f"HEAD:{p}" for p in current]))
    for path, data in current.items():
        old = committed.get(f"HEAD:{path}")
        if old is not None and not gitcrypt.is_ciphertext(old):
            check_history(path, old, data, ctx)


def main(argv: Sequence[str] | None = None) -> int:
    return run_main(argv, [(CHECK_ID, check)], "Check conversation transcripts.")


if __name__ == "__main__":
    raise SystemExit(main())
