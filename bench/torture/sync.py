"""Torture: several clones of one bare remote editing the same knowledge files, `memory sync`.

Why: two machines sharing one memory (a laptop and a server, two agents) edit the same
files, sometimes the same lines. ``memory sync`` rebases; what git cannot merge stops for
a person. This harness measures how often that happens, and checks the promises that
hold whatever the merge does: nothing acknowledged (pushed) is ever lost unless it was
deliberately replaced, every clone converges on one history, and no file is left broken
(conflict markers, frontmatter that does not parse).

Each round every clone edits like an agent does (dated bullets appended to knowledge
files, an existing bullet reworded, a journal note through ``memory remember``, now and
then a new reference file or a rewritten prose line; some rounds two clones reword the
same bullet), commits with
``memory commit`` and syncs with ``memory sync`` (the real CLI, one process each). A sync
that stops is resolved as a person would: ``git rebase``, keep both sides' lines of every
conflict hunk (for a frontmatter key, the later value), continue, sync again.

    .venv/bin/python bench/torture/sync.py                     # 3 clones x 100 rounds
    .venv/bin/python bench/torture/sync.py --quick             # 3 clones x 15 rounds
    .venv/bin/python bench/torture/sync.py --no-merge-driver   # git's own merge ('before')

``--no-merge-driver`` overrides the repo's ``.gitattributes`` in each clone's
``.git/info/attributes`` with what memrepo shipped before its merge driver (git's text
merge for knowledge, union for journals). Exit status 1 when a promise is broken.
"""

from __future__ import annotations

import argparse
import datetime as dt
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

sys.path.append(str(Path(__file__).resolve().parents[1] / "common"))  # results.py
from common import sandbox_env
from results import add_record_option, record_summary

MEMORY = str(Path(sys.executable).with_name("memory"))
ID = re.compile(r"\bk[0-9a-z]+x\b")  # the harness's bullet ids: k<clone>r<round>n<k>x
BEFORE_ATTRIBUTES = "knowledge/**/*.md merge=text\ntopics/*.md merge=text\n" \
                    "knowledge/journal/*.md merge=union\n"
FILES = {  # path -> (frontmatter, sections)
    "knowledge/memory/MEMORY.md": (None, ["Key Decisions", "Lessons Learned", "Active Context"]),
    "knowledge/projects/alpha/context.md": ("type: project_context", ["Decisions", "Status"]),
    "knowledge/projects/beta/context.md": ("type: project_context", ["Decisions", "Status"]),
    "knowledge/people/ana-lima.md": ("type: person\nname: Ana Lima", ["Facts"]),
    "knowledge/people/bo-chen.md": ("type: person\nname: Bo Chen", ["Facts"]),
    "knowledge/reference/stack.md": ("type: reference", ["Services", "Hosts"]),
    "knowledge/procedures/deploy.md": ("type: procedure", ["Steps"]),
}
WORDS = ["ledger", "postgres", "queue", "retry", "billing", "cache", "deploy", "rollout",
         "canary", "invoice", "schema", "token", "rotate", "replica", "backup", "alert",
         "pager", "budget", "review", "latency", "index", "shard"]
START = dt.date(2026, 3, 1)
PROSE = "What this file is about:"  # a prose line some rounds rewrite (a person decides)


def day(r: int) -> str:
    return (START + dt.timedelta(days=r // 4)).isoformat()


@dataclass
class Stats:
    rounds: int = 0
    same_file_rounds: int = 0  # a sync met remote commits touching a file its own touched
    same_line_rounds: int = 0  # the harness had two clones reword one bullet
    person_rounds: int = 0  # rounds where a sync stopped for a manual merge
    person_same_file: int = 0  # of those, rounds counted in same_file_rounds
    stops: int = 0  # syncs that stopped (a round may have several)
    errors: list[str] = field(default_factory=list)
    acknowledged: set[str] = field(default_factory=set)
    superseded: set[str] = field(default_factory=set)


def run(cmd: list[str], cwd: Path, env: dict[str, str], check: bool = True,
        ) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True)
    if check and proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd[:3])} in {cwd.name}: {proc.stderr}{proc.stdout}")
    return proc


def git(cwd: Path, env: dict[str, str], *args: str, check: bool = True) -> str:
    return run(["git", *args], cwd, env, check).stdout


def memory(cwd: Path, env: dict[str, str], *args: str, check: bool = True,
           ) -> subprocess.CompletedProcess[str]:
    return run([MEMORY, *args], cwd, env, check)


def seed_repo(base: Path, env: dict[str, str]) -> Path:
    seed = base / "seed"
    memory(base, env, "init", "--hooks", "direct", str(seed))  # hooks that cost little
    for rel, (fm, sections) in FILES.items():
        path = seed / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if fm is None:
            text = path.read_text()
        else:
            text = f"---\n{fm}\nupdated: {day(0)}\n---\n\n# {path.stem}\n\n{PROSE} kept short.\n"
        for s in sections:
            if f"## {s}\n" not in text:
                text = text.rstrip("\n") + f"\n\n## {s}\n"
            text = insert_bullet(text, s, f"- {day(0)}: seed fact about {s.lower()} "
                                          f"k0s{len(text)}x")
        path.write_text(text)
    memory(seed, env, "commit", "--no-llm", "--no-push")
    return seed


def insert_bullet(text: str, section: str, bullet: str) -> str:
    """``bullet`` after the last non-blank line of ``section`` (as extraction writes)."""
    lines = text.split("\n")
    head = lines.index(f"## {section}")
    end = next((i for i in range(head + 1, len(lines)) if lines[i].startswith("#")), len(lines))
    at = end
    while at > head + 1 and not lines[at - 1].strip():
        at -= 1
    lines.insert(at, bullet)
    return "\n".join(lines)


def touch_updated(text: str, when: str) -> str:
    return re.sub(r"(?m)^updated: .*$", f"updated: {when}", text, count=1)


def live_bullets(text: str) -> list[str]:
    return [ln for ln in text.split("\n") if ln.startswith("- ") and "~~" not in ln
            and ID.search(ln)]


def phrase(rng: random.Random) -> str:
    return " ".join(rng.sample(WORDS, 4))


class Clone:
    def __init__(self, n: int, root: Path, env: dict[str, str]):
        self.n, self.root, self.env = n, root, env
        self.pending: set[str] = set()  # ids written here, not pushed yet

    def add_bullet(self, rng: random.Random, r: int, k: int) -> None:
        rel = rng.choice(list(FILES))
        if rel.endswith("MEMORY.md") and rng.random() < 0.6:
            rel = "knowledge/reference/stack.md"  # keep MEMORY.md under its cap
        path = self.root / rel
        text = path.read_text()
        ident = f"k{self.n}r{r}n{k}x"
        section = rng.choice(FILES[rel][1])
        text = insert_bullet(text, section, f"- {day(r)}: {phrase(rng)} {ident}")
        path.write_text(touch_updated(text, day(r)))
        self.pending.add(ident)

    def reword(self, rel: str, old: str, r: int, tag: str, stats: Stats) -> bool:
        path = self.root / rel
        text = path.read_text()
        if old not in text.split("\n"):
            return False
        ident = f"k{self.n}r{r}{tag}x"
        new = f"- {day(r)}: reworded as {' '.join(WORDS[r % 7:r % 7 + 3])} {ident}"
        path.write_text(touch_updated(text.replace(old, new, 1), day(r)))
        stats.superseded.update(ID.findall(old))
        self.pending.add(ident)
        return True

    def edit_prose(self, rng: random.Random, r: int) -> None:
        """Rewrite the prose line under a file's title (no id: nothing to lose)."""
        rel = rng.choice([f for f, (fm, _) in FILES.items() if fm is not None])
        path = self.root / rel
        text = re.sub(rf"(?m)^{re.escape(PROSE)} .*$", f"{PROSE} {phrase(rng)} (r{r}).",
                      path.read_text(), count=1)
        path.write_text(touch_updated(text, day(r)))

    def new_file(self, r: int) -> None:
        ident = f"k{self.n}r{r}fx"
        path = self.root / f"knowledge/reference/note-{ident}.md"
        path.write_text(f"---\ntype: reference\nupdated: {day(r)}\n---\n\n# Note\n\n"
                        f"- {day(r)}: a new file {ident}\n")
        self.pending.add(ident)

    def remember(self, rng: random.Random, r: int) -> None:
        ident = f"k{self.n}r{r}jx"
        memory(self.root, self.env, "remember", f"journal {phrase(rng)} {ident}")
        self.pending.add(ident)

    def commit(self) -> None:
        memory(self.root, self.env, "commit", "--no-llm", "--no-push")

    def overlap(self) -> set[str]:
        """Knowledge files both this clone's unpushed commits and the remote's new ones
        touched (what a rebase has to merge)."""
        git(self.root, self.env, "fetch", "-q", "origin")
        base = git(self.root, self.env, "merge-base", "HEAD", "origin/main").strip()

        def changed(rev: str) -> set[str]:
            out = git(self.root, self.env, "diff", "--name-only", "--no-renames", base, rev,
                      "--", "knowledge", "topics")
            return set(out.split())

        return changed("HEAD") & changed("origin/main")

    def sync(self, stats: Stats) -> bool:
        """``memory sync``; True when it stopped for a person (who then merged)."""
        proc = memory(self.root, self.env, "sync", check=False)
        if proc.returncode == 0:
            stats.acknowledged |= self.pending
            self.pending = set()
            return False
        if "sync stopped" not in proc.stderr or "Nothing was lost" not in proc.stderr:
            stats.errors.append(f"clone {self.n}: memory sync failed: {proc.stderr.strip()}")
            return False
        stats.stops += 1
        self.merge_by_hand(stats)
        proc = memory(self.root, self.env, "sync", check=False)
        if proc.returncode != 0:
            stats.errors.append(f"clone {self.n}: sync after a manual merge: {proc.stderr}")
        else:
            stats.acknowledged |= self.pending
            self.pending = set()
        return True

    def merge_by_hand(self, stats: Stats) -> None:
        env = {**self.env, "GIT_EDITOR": "true"}
        proc = run(["git", "rebase", "origin/main"], self.root, env, check=False)
        for _ in range(50):
            if proc.returncode == 0:
                return
            files = git(self.root, env, "diff", "--name-only", "--diff-filter=U").split()
            if not files:
                stats.errors.append(f"clone {self.n}: rebase stopped without conflicts: "
                                    f"{proc.stderr.strip()}")
                run(["git", "rebase", "--abort"], self.root, env, check=False)
                return
            for rel in files:
                path = self.root / rel
                path.write_text(keep_both(path.read_text()))
                git(self.root, env, "add", "--", rel)
            proc = run(["git", "rebase", "--continue"], self.root, env, check=False)
        stats.errors.append(f"clone {self.n}: the manual merge did not finish")


_HUNK = re.compile(r"^<<<<<<< [^\n]*\n(.*?)^(?:\|\|\|\|\|\|\| [^\n]*\n(.*?))?=======\n(.*?)"
                   r"^>>>>>>> [^\n]*\n", re.S | re.M)


def keep_both(text: str) -> str:
    """What a careful person does with a conflict in a knowledge file: keep both sides'
    lines (ours, then theirs' lines ours lacks); a frontmatter key takes the later value."""

    def resolve(m: re.Match[str]) -> str:
        ours, theirs = m.group(1).splitlines(), m.group(3).splitlines()
        keyed = re.compile(r"^(\w+): (.*)$")
        if all(keyed.match(x) for x in ours + theirs):
            merged = {keyed.match(x).group(1): x for x in ours}  # type: ignore[union-attr]
            for x in theirs:
                k = keyed.match(x).group(1)  # type: ignore[union-attr]
                merged[k] = max(merged.get(k, x), x)
            return "".join(v + "\n" for v in merged.values())
        return "".join(x + "\n" for x in ours + [t for t in theirs if t not in ours])

    return _HUNK.sub(resolve, text)


def setup(base: Path, n: int, driver: bool) -> tuple[list[Clone], Path, dict[str, str]]:
    env = sandbox_env(base / "home", MEMORY)
    seed = seed_repo(base, env)
    bare = base / "remote.git"
    git(base, env, "clone", "-q", "--bare", str(seed), str(bare))
    clones = []
    for i in range(1, n + 1):
        root = base / f"clone{i}"
        git(base, env, "clone", "-q", str(bare), str(root))
        git(root, env, "config", "user.name", f"machine {i}")
        memory(root, env, "init", str(root))  # a new machine: hooks (and the merge driver)
        if not driver:
            (root / ".git/info").mkdir(exist_ok=True)
            (root / ".git/info/attributes").write_text(BEFORE_ATTRIBUTES)
        clones.append(Clone(i, root, env))
    return clones, bare, env


def play_round(r: int, clones: list[Clone], bare: Path, env: dict[str, str],
               rng: random.Random, stats: Stats) -> None:
    stats.rounds += 1
    # two clones reword the same bullet (one they both have, as the remote has it)
    if rng.random() < 0.35:
        rel = rng.choice(list(FILES))
        shown = git(bare, env, "show", f"main:{rel}")
        pair = rng.sample(clones, 2)
        cands = [b for b in live_bullets(shown)
                 if all(b in (c.root / rel).read_text().split("\n") for c in pair)]
        if cands:
            target = rng.choice(cands)
            if all(c.reword(rel, target, r, f"s{j}", stats) for j, c in enumerate(pair)):
                stats.same_line_rounds += 1
    for c in clones:
        for k in range(rng.randint(0, 2)):
            c.add_bullet(rng, r, k)
        if rng.random() < 0.2:
            rel = rng.choice(list(FILES))
            mine = live_bullets((c.root / rel).read_text())
            if mine:
                c.reword(rel, rng.choice(mine), r, "w", stats)
        if rng.random() < 0.08:
            c.new_file(r)
        if rng.random() < 0.06:
            c.edit_prose(rng, r)
        if rng.random() < 0.4:
            c.remember(rng, r)
        c.commit()
    same_file = person = False
    for c in rng.sample(clones, len(clones)):
        same_file |= bool(c.overlap())
        person |= c.sync(stats)
    stats.same_file_rounds += same_file
    stats.person_rounds += person
    stats.person_same_file += person and same_file


def converge(clones: list[Clone], bare: Path, env: dict[str, str], stats: Stats) -> bool:
    for _ in range(4):
        for c in clones:
            c.sync(stats)
        heads = {git(c.root, env, "rev-parse", "HEAD").strip() for c in clones}
        if heads == {git(bare, env, "rev-parse", "main").strip()}:
            return all(not git(c.root, env, "status", "--porcelain", "--", "knowledge")
                       for c in clones)
    return False


def audit(root: Path, env: dict[str, str], stats: Stats) -> tuple[int, list[str], list[str]]:
    """(ids required, ids lost, broken files) in the converged tree."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    from memrepo import documents
    from memrepo.errors import FormatError

    text, broken = [], []
    for rel in git(root, env, "ls-files", "knowledge", "topics").split():
        if not rel.endswith(".md"):
            continue
        body = (root / rel).read_text()
        text.append(body)
        if re.search(r"^(<<<<<<<|>>>>>>>) ", body, re.M):
            broken.append(f"{rel}: conflict markers")
        try:
            documents.parse_document(body, rel)
        except FormatError as exc:
            broken.append(f"{rel}: {exc}")
    found = set(ID.findall("\n".join(text)))
    required = stats.acknowledged - stats.superseded
    return len(required), sorted(required - found), broken


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--clones", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=100)
    ap.add_argument("--seed", type=int, default=14)
    ap.add_argument("--quick", action="store_true", help="15 rounds (about a minute)")
    ap.add_argument("--no-merge-driver", action="store_true",
                    help="git's own merge, as before memrepo's merge driver")
    ap.add_argument("--keep", action="store_true", help="keep the temp dir and print it")
    add_record_option(ap)
    args = ap.parse_args()
    rounds = 15 if args.quick else args.rounds
    rng = random.Random(args.seed)
    base = Path(tempfile.mkdtemp(prefix="memrepo-torture-sync-"))
    stats = Stats()
    t0 = time.monotonic()
    try:
        clones, bare, env = setup(base, args.clones, not args.no_merge_driver)
        for r in range(1, rounds + 1):
            play_round(r, clones, bare, env, rng, stats)
            if r % 10 == 0:
                print(f"round {r}: {stats.person_rounds} needed a person "
                      f"({time.monotonic() - t0:.0f} s)", file=sys.stderr, flush=True)
        converged = converge(clones, bare, env, stats)
        required, lost, broken = audit(clones[0].root, env, stats)
    finally:
        if args.keep:
            print(f"kept {base}")
        else:
            shutil.rmtree(base, ignore_errors=True)
    mode = "git's own merge (--no-merge-driver)" if args.no_merge_driver else "merge driver"
    for e in stats.errors[:10]:
        print(f"error: {e}")
    for b in broken[:10]:
        print(f"broken: {b}")
    if lost:
        print(f"lost: {', '.join(lost[:20])}")
    print(f"{mode}: {args.clones} clones x {rounds} rounds (seed {args.seed}), "
          f"{time.monotonic() - t0:.0f} s")
    print(f"rounds where two clones edited the same knowledge file: {stats.same_file_rounds} "
          f"(same bullet reworded in two clones: {stats.same_line_rounds} rounds)")
    print(f"syncs stopped for a manual merge: {stats.stops}")
    summary = (
        f"SUMMARY sync: same-file conflicting rounds needing a person: "
        f"{stats.person_same_file} of {stats.same_file_rounds}; all rounds needing a person: "
        f"{stats.person_rounds} of {stats.rounds}; bullets lost: {len(lost)} of {required}; "
        f"broken files: {len(broken)}; converged: {'yes' if converged else 'NO'}; "
        f"errors: {len(stats.errors)}")
    print(summary)
    record_summary(__file__, summary, args, person_same_file=stats.person_same_file,
                   same_file_rounds=stats.same_file_rounds, person_rounds=stats.person_rounds,
                   rounds=stats.rounds, bullets_lost=len(lost), bullets_required=required,
                   broken_files=len(broken), converged=converged, errors=len(stats.errors))
    return 0 if converged and not lost and not broken and not stats.errors else 1


if __name__ == "__main__":
    sys.exit(main())
