"""The merge driver for knowledge markdown (``merge=memrepo`` in ``.gitattributes``).

Why: two clones of one memory edit the same files (a laptop and a server, two agents),
and knowledge files are dated bullet lists. git's line merge stops whenever both sides
touched neighbouring lines, which for a list that both sides append to is nearly always
(``bench/torture/sync.py``). This driver is a 3-way merge by line that resolves what a
person would resolve the same way every time, and nothing else:

- lines added on both sides at the same place are all kept (identical ones once), in
  ours-then-theirs order: two appended bullets, two new sections;
- a bullet both sides changed differently is kept twice: the later one (by its date;
  on a tie, theirs: the commit a rebase replays) as it is, the other struck through and
  pointing at it, the marker extraction and ``memory update`` write
  (:func:`memrepo.entries.superseded_line`);
- a bullet one side deleted and the other side changed is kept as changed (nothing the
  other side wrote is lost);
- frontmatter is merged key by key: a key only one side changed takes that change, a
  list both changed takes both sides' items, a date both changed takes the later
  (``created``: the earlier); ``line_count`` (MEMORY.md's size) is not merged but
  counted again in the merged file, so two clones that both grew MEMORY.md never stop
  on it;

and stops, like ``git merge-file`` (conflict markers in the file, exit status 1), on
everything else: prose, a heading or any non-bullet line both sides changed, a scalar
frontmatter key both sides set differently. A file it cannot read as text is left to
``git merge-file`` itself. Transcripts (``raw/``) are immutable and never merged here.
"""

from __future__ import annotations

import datetime as dt
import difflib
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memrepo import clock, gitcrypt, yamlsafe
from memrepo import entries as E
from memrepo.documents import LINE_COUNT_KEY, with_line_count
from memrepo.errors import GitError
from memrepo.git import git, toplevel

#: The driver's name in ``.gitattributes`` and git's config (``merge.memrepo.*``).
NAME = "memrepo"
DRIVER_KEY = f"merge.{NAME}.driver"
LABEL_KEY = f"merge.{NAME}.name"
LABEL = "memrepo: knowledge markdown (bullets kept from both sides)"
#: A bullet line of any list (nested ones too): what may be unioned and superseded.
_LIST_LINE = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s")
_DELIM = "---"
_DATE = re.compile(r"^(\d{4}-\d{2}-\d{2})")


def driver_command(python: str | None = None) -> str:
    """The command git runs (through a shell): this interpreter, absolute, so the driver
    works whatever PATH the merging process has."""
    exe = shlex.quote(python or sys.executable)
    return f"{exe} -m memrepo merge-driver --marker-size %L %O %A %B %P"


# ---------------------------------------------------------------------------
# The merge
# ---------------------------------------------------------------------------


@dataclass
class Merged:
    """The merged text, how many hunks were left in conflict, and what was resolved."""

    text: str
    conflicts: int = 0
    resolved: list[str] = field(default_factory=list)


def merge_text(base: str, ours: str, theirs: str, *, marker_size: int = 7,
               labels: tuple[str, str] = ("ours", "theirs"),
               today: dt.date | None = None) -> Merged:
    """The 3-way merge of one knowledge file (``ours`` is git's %A, ``theirs`` %B)."""
    out = Merged("")
    fm = [_split(t) for t in (base, ours, theirs)]
    if fm[1][0] is not None and fm[2][0] is not None:
        # a base without frontmatter (both sides created the file: git's base is empty)
        # merges from no keys
        head = _merge_frontmatter(fm[0][0] or [], fm[1][0], fm[2][0], out, marker_size,
                                  labels)
        bodies = [f[1] for f in fm]
    else:  # a side without frontmatter: the whole file is one body
        head, bodies = [], [t.split("\n") for t in (base, ours, theirs)]
    body = _merge_lines(bodies[0], bodies[1], bodies[2], out, marker_size, labels,
                        today or clock.today())
    out.text = "\n".join([*head, *body])
    if not out.conflicts:  # a derived key: counted in the merged file, never merged
        counted = with_line_count(out.text, add=False)
        if counted != out.text:
            out.text = counted
            out.resolved.append(f"frontmatter {LINE_COUNT_KEY}: counted in the merged file")
    return out


def _split(text: str) -> tuple[list[str] | None, list[str]]:
    """(frontmatter lines between the ``---`` lines, or None; the rest) of ``text``."""
    lines = text.split("\n")
    if lines and lines[0].rstrip() == _DELIM:
        for i in range(1, len(lines)):
            if lines[i].rstrip() == _DELIM:
                return lines[1:i], lines[i + 1:]
    return None, lines


def _markers(ours: list[str], theirs: list[str], size: int,
             labels: tuple[str, str]) -> list[str]:
    return ["<" * size + f" {labels[0]}", *ours, "=" * size, *theirs, ">" * size + f" {labels[1]}"]


# --- frontmatter -----------------------------------------------------------------------


def _key_blocks(lines: list[str]) -> dict[str, list[str]] | None:
    """Top-level keys with their lines (a key line and its indented or ``- `` items), in
    order; None for anything this cannot split (comments, flow mappings over lines)."""
    blocks: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in lines:
        if line and not line[0].isspace() and not line.startswith(("- ", "#")):
            key = line.split(":", 1)[0].strip()
            if ":" not in line or not key or key in blocks:
                return None
            current = blocks[key] = [line]
        elif current is not None and (not line.strip() or line[0].isspace()
                                      or line.startswith("- ")):
            current.append(line)
        else:
            return None
    return blocks


def _value(key: str, block: list[str]) -> Any:
    try:
        data = yamlsafe.load("\n".join(block))
    except yamlsafe.YAMLProblem:
        return None
    return data.get(key) if isinstance(data, dict) else None


def _merge_key(key: str, o: list[str] | None, a: list[str] | None, b: list[str] | None,
               ) -> tuple[list[str] | None, str | None]:
    """(the merged block or None when deleted, what was decided) or raise _Conflict."""
    if a == b:
        return a, None
    if a == o:
        return b, None
    if b == o:
        return a, None
    if key == LINE_COUNT_KEY and a is not None and b is not None:
        return a, None  # counted again once the whole file is merged (merge_text)
    if a is None or b is None:
        raise _Conflict
    va, vb, vo = _value(key, a), _value(key, b), _value(key, o) if o else None
    if isinstance(va, list) and isinstance(vb, list):
        base = vo if isinstance(vo, list) else []
        gone = [x for x in base if x not in va or x not in vb]
        items = [x for x in [*va, *(x for x in vb if x not in va)] if x not in gone]
        return yamlsafe.dump({key: items}).rstrip("\n").split("\n"), f"{key}: both lists"
    if isinstance(va, dt.date) and type(va) is type(vb):
        pick = min if key == "created" else max
        return (a if pick(va, vb) == va else b), f"{key}: the {pick.__name__} date"
    raise _Conflict


class _Conflict(Exception):
    pass


def _merge_frontmatter(o: list[str], a: list[str], b: list[str], out: Merged, size: int,
                       labels: tuple[str, str]) -> list[str]:
    """The merged frontmatter, ``---`` lines included (conflicting keys in markers)."""
    if a == b or b == o:
        return [_DELIM, *a, _DELIM]
    if a == o:
        return [_DELIM, *b, _DELIM]
    blocks = [_key_blocks(x) for x in (o, a, b)]
    if any(x is None for x in blocks):
        out.conflicts += 1
        return [_DELIM, *_markers(a, b, size, labels), _DELIM]
    bo, ba, bb = blocks  # type: ignore[misc]
    merged: list[str] = []
    for key in [*ba, *(k for k in bb if k not in ba)]:
        try:
            block, why = _merge_key(key, bo.get(key), ba.get(key), bb.get(key))
        except _Conflict:
            out.conflicts += 1
            merged += _markers(ba.get(key, []), bb.get(key, []), size, labels)
            continue
        if why:
            out.resolved.append(f"frontmatter {why}")
        merged += block or []
    return [_DELIM, *merged, _DELIM]


# --- body ------------------------------------------------------------------------------


def _matches(a: list[str], b: list[str]) -> dict[int, int]:
    """Line i of ``a`` -> its line in ``b``, for the lines a diff keeps."""
    sm = difflib.SequenceMatcher(None, a, b, autojunk=False)
    return {blk.a + k: blk.b + k for blk in sm.get_matching_blocks() for k in range(blk.size)}


def _chunks(o: list[str], a: list[str], b: list[str],
            ) -> list[tuple[list[str], list[str], list[str]]]:
    """diff3: (base, ours, theirs) runs between the lines all three keep in order; a
    stable run has all three equal."""
    ma, mb = _matches(o, a), _matches(o, b)
    out: list[tuple[list[str], list[str], list[str]]] = []
    io = ia = ib = 0
    for i in range(len(o)):
        if i not in ma or i not in mb or ma[i] < ia or mb[i] < ib or i < io:
            continue
        ja, jb = ma[i], mb[i]
        if (io, ia, ib) != (i, ja, jb):
            out.append((o[io:i], a[ia:ja], b[ib:jb]))
        out.append(([o[i]], [a[ja]], [b[jb]]))
        io, ia, ib = i + 1, ja + 1, jb + 1
    if (io, ia, ib) != (len(o), len(a), len(b)):
        out.append((o[io:], a[ia:], b[ib:]))
    return out


def _merge_lines(o: list[str], a: list[str], b: list[str], out: Merged, size: int,
                 labels: tuple[str, str], today: dt.date) -> list[str]:
    merged: list[str] = []
    for co, ca, cb in _chunks(o, a, b):
        if ca == cb or cb == co:
            merged += ca
        elif ca == co:
            merged += cb
        else:
            resolved = _resolve(co, ca, cb, out, today)
            if resolved is None:
                out.conflicts += 1
                merged += _markers(ca, cb, size, labels)
            else:
                merged += resolved
    return merged


def _listy(line: str) -> bool:
    return not line.strip() or bool(_LIST_LINE.match(line))


def _union(a: list[str], b: list[str]) -> list[str]:
    """Both sequences, what they share once: ours' run, then theirs', at each difference."""
    sm = difflib.SequenceMatcher(None, a, b, autojunk=False)
    out: list[str] = []
    for tag, a0, a1, b0, b1 in sm.get_opcodes():
        out += a[a0:a1]
        if tag != "equal":
            out += b[b0:b1]
    return out


def _resolve(o: list[str], a: list[str], b: list[str], out: Merged,
             today: dt.date) -> list[str] | None:
    """A hunk both sides changed: the union of their lines, less what either deleted, with
    each bullet both sides changed kept as a superseded pair; None when a line that is not
    a bullet was changed by both sides, or deleted by one and changed by the other (a
    person decides)."""
    new_a = [x for x in a if x.strip() and x not in o and x not in b]
    new_b = [x for x in b if x.strip() and x not in o and x not in a]
    both_changed = [x for x in o if x.strip() and x not in a and x not in b]
    if (any(not _listy(x) for x in both_changed)
            and any(not _listy(x) for x in new_a + new_b)):
        return None
    gone = {x for x in o if x.strip() and (x not in a or x not in b)}
    seen: set[str] = set()
    lines = []
    for x in _union(a, b):
        if x in gone or (x.strip() and x in seen):
            continue
        seen.add(x)
        lines.append(x)
    for old, x, y in _pairs(both_changed, new_a, new_b):
        keep, drop = _later(x, y)
        entry, kept = E.parse_entry(drop), E.parse_entry(keep)
        if entry is None or kept is None or entry.superseded or kept.superseded:
            continue
        struck = E.superseded_line(entry, kept.date or today.isoformat(), kept.text)
        lines.remove(drop)
        lines.insert(lines.index(keep) + 1, struck)  # right under what replaced it
        out.resolved.append(f"changed on both sides: {old.strip()}")
    if new_a and new_b and not both_changed:
        out.resolved.append(f"added on both sides: {len(new_a)} + {len(new_b)} line(s)")
    return lines


def _pairs(olds: list[str], xs: list[str], ys: list[str]) -> list[tuple[str, str, str]]:
    """(base bullet, ours' version, theirs' version) of bullets both sides changed: by
    position when each side changed as many as the base lost, else by likeness."""
    olds = [x for x in olds if E.parse_entry(x)]
    xs = [x for x in xs if E.parse_entry(x)]
    ys = [y for y in ys if E.parse_entry(y)]
    if len(olds) == len(xs) == len(ys):
        return list(zip(olds, xs, ys, strict=True))
    pairs = []
    for old in olds:
        x = _likest(old, xs)
        y = _likest(old, ys)
        if x is not None and y is not None:
            pairs.append((old, x, y))
            xs.remove(x)
            ys.remove(y)
    return pairs


def _likest(old: str, cands: list[str]) -> str | None:
    scored = [(difflib.SequenceMatcher(None, old, c).ratio(), c) for c in cands]
    best = max(scored, default=(0.0, None))
    return best[1] if best[0] >= 0.5 else None


def _later(x: str, y: str) -> tuple[str, str]:
    """(the version to keep, the one to strike): the later date wins, theirs on a tie."""
    dx, dy = _DATE.match(_body(x)), _DATE.match(_body(y))
    if dx and dy and dx.group(1) > dy.group(1):
        return x, y
    return y, x


def _body(line: str) -> str:
    return _LIST_LINE.sub("", line, count=1)


# ---------------------------------------------------------------------------
# What git calls: ``memory merge-driver %O %A %B %P``
# ---------------------------------------------------------------------------


def run_driver(base: Path, ours: Path, theirs: Path, path: str, marker_size: int = 7) -> int:
    """Merge into ``ours`` (git's %A) as git expects: exit 0 when clean, 1 with conflict
    markers left in the file. What this cannot read as UTF-8 text goes to
    ``git merge-file`` (git's own merge, with its markers).

    git gives a driver a git-crypt file (``private.paths``) as ciphertext and stores what
    it leaves in %A as it is: such a file is merged as its plaintext and written back
    encrypted; without the key it is left to a person."""
    raw = [p.read_bytes() for p in (base, ours, theirs)]
    sealed = any(gitcrypt.is_ciphertext(b) for b in raw)
    root = Path.cwd()  # git runs the driver at the top of the work tree
    if sealed:
        raw = [gitcrypt.reveal(root, b) for b in raw]
    try:
        texts = [b.decode("utf-8") for b in raw]
        if any("\0" in t for t in texts):
            raise UnicodeDecodeError("utf-8", b"", 0, 1, "NUL byte")
    except UnicodeDecodeError:
        return 1 if sealed else _merge_file(base, ours, theirs, path, marker_size)
    result = merge_text(*texts, marker_size=marker_size, labels=(f"ours:{path}",
                                                                 f"theirs:{path}"))
    out = result.text.encode("utf-8")
    if sealed and not result.conflicts:  # with conflicts a person resolves, git add seals
        encrypted = gitcrypt.seal(root, path, out)
        if encrypted is None:
            return 1
        out = encrypted
    tmp = ours.with_name(ours.name + ".memrepo-merge")
    tmp.write_bytes(out)
    tmp.replace(ours)
    return 1 if result.conflicts else 0


def _merge_file(base: Path, ours: Path, theirs: Path, path: str, marker_size: int) -> int:
    proc = subprocess.run(
        ["git", "merge-file", f"--marker-size={marker_size}", "-L", f"ours:{path}", "-L",
         "base", "-L", f"theirs:{path}", str(ours), str(base), str(theirs)],
        capture_output=True,
    )
    return 0 if proc.returncode == 0 else 1


# ---------------------------------------------------------------------------
# Wiring: git's config of this clone (``memory init``, ``memory doctor --fix``)
# ---------------------------------------------------------------------------


def configured(root: Path) -> str | None:
    """The driver command this clone's git config names, or None."""
    out = git(["config", "--get", DRIVER_KEY], root, check=False).strip()
    return out or None


def driver_runs(command: str) -> bool:
    """Whether the interpreter a configured command names still exists."""
    try:
        exe = shlex.split(command)[0]
    except (ValueError, IndexError):
        return False
    return Path(exe).is_file()


def install_driver(root: Path) -> list[str]:
    """Define the driver in this clone's git config when it is missing or names an
    interpreter that is gone; what was done (nothing when it was already there, or when
    ``root`` is no git repository)."""
    top = toplevel(root)
    if top is None or top.resolve() != Path(root).resolve():
        return []  # never the config of a repository around it
    try:
        current = configured(root)
        if current is not None and driver_runs(current):
            return []
        git(["config", "--local", LABEL_KEY, LABEL], root)
        git(["config", "--local", DRIVER_KEY, driver_command()], root)
    except GitError:
        return []
    return [f"{DRIVER_KEY} = {driver_command()}"]


def attribute_of(root: Path, path: str) -> str:
    """The ``merge`` attribute git gives ``path`` (``memrepo`` when the driver is wired)."""
    out = git(["check-attr", "merge", "--", path], root, check=False).strip()
    return out.rsplit(": ", 1)[-1] if out else "unspecified"


def git_config_args() -> list[str]:
    """``-c`` options that define the driver for one git command (``memory sync`` runs
    its rebase with them, so a clone nobody configured merges the same way)."""
    return ["-c", f"{LABEL_KEY}={LABEL}", "-c", f"{DRIVER_KEY}={driver_command()}"]
