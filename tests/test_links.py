"""Links between memory files (#16; seed 001 co-recall, 003 §5, 000 phase 4 wikilinks)."""

from __future__ import annotations

from memrepo.index import links


def test_wikilinks_and_relative_markdown_links_are_found_outside_code() -> None:
    text = "\n".join([
        "# Alice",
        "Works with [[bob-smith]] and [[Carol Jones|Carol]] on [[projects/atlas#goals]].",
        "See [the runbook](../procedures/deploy.md#rollback) and [site](https://x.org/a.md).",
        "```",
        "[[not-a-link]] [nor](this.md)",
        "```",
        "![diagram](img.md) [up](../../../etc/passwd.md) [[]]",
    ])
    found = links.extract("knowledge/people/alice.md", text)
    assert [(k.line, k.kind, k.target) for k in found] == [
        (2, "wiki", "bob-smith"),
        (2, "wiki", "Carol Jones"),
        (2, "wiki", "projects/atlas"),
        (3, "md", "knowledge/procedures/deploy.md"),
    ]


def test_a_hostile_line_is_cheap() -> None:
    import time

    line = "[[" * 50_000 + "[" * 50_000 + "](" * 50_000
    t0 = time.perf_counter()
    links.extract("a.md", line)
    assert time.perf_counter() - t0 < 1.0


def _commit(root, files: dict[str, str]) -> None:
    import subprocess

    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    subprocess.run(["git", "add", *files], cwd=root, check=True)
    subprocess.run(["git", "commit", "-qm", "knowledge: links"], cwd=root, check=True)


ATLAS = ("---\ntype: project_notes\n---\n\n# Atlas\n\n"
         "- Launch date is 3 March; the steps are in [[release-steps]].\n")
STEPS = ("---\ntype: procedure\n---\n\n# Release steps\n\n- Freeze the branch.\n"
         "- Tag it and publish the packages.\n")


def test_links_are_indexed_listed_and_pulled_into_compile(crepo) -> None:
    import json

    from conftest import invoke_memory

    _commit(crepo, {"knowledge/projects/atlas.md": ATLAS,
                    "knowledge/procedures/release-steps.md": STEPS,
                    "knowledge/people/ann.md": "---\ntype: person\nname: Ann\n---\n\n"
                    "- Owns [Atlas](../projects/atlas.md) and [[no-such-page]].\n"})
    out = json.loads(invoke_memory(crepo, "links", "--json",
                                   "knowledge/projects/atlas.md").stdout)
    assert out["links"] == [{"line": 7, "kind": "wiki", "target": "release-steps",
                             "path": "knowledge/procedures/release-steps.md"}]
    assert out["backlinks"] == [{"path": "knowledge/people/ann.md", "line": 6, "kind": "md"}]
    text = invoke_memory(crepo, "links", "knowledge/people/ann.md").stdout
    assert "no-such-page : BROKEN" in text
    # compile: the recalled Atlas passage brings the release steps it links to
    res = invoke_memory(crepo, "compile", "--json", "when is the atlas launch")
    sections = json.loads(res.stdout)["sections"]
    kinds = {(s["kind"], s["path"]) for s in sections}
    assert ("knowledge", "knowledge/projects/atlas.md") in kinds
    assert ("linked", "knowledge/procedures/release-steps.md") in kinds
    # renamed away: the link is broken, and listed so
    import subprocess

    subprocess.run(["git", "mv", "knowledge/procedures/release-steps.md",
                    "knowledge/procedures/shipping.md"], cwd=crepo, check=True)
    subprocess.run(["git", "commit", "-qm", "knowledge: rename"], cwd=crepo, check=True)
    out = json.loads(invoke_memory(crepo, "links", "--json",
                                   "knowledge/projects/atlas.md").stdout)
    assert out["links"][0]["path"] is None


def test_the_commit_is_warned_of_links_that_break(crepo) -> None:
    import subprocess

    _commit(crepo, {"knowledge/projects/atlas.md": ATLAS,
                    "knowledge/procedures/release-steps.md": STEPS})
    # a link to a file that does not exist: a warning naming file:line, the commit goes on
    (crepo / "knowledge/people/ann.md").write_text(
        "---\ntype: person\nname: Ann\n---\n\n- See [the plan](../projects/plan.md).\n"
        "- And [[nobody-here]] and [[atlas]].\n", encoding="utf-8")
    subprocess.run(["git", "add", "knowledge/people/ann.md"], cwd=crepo, check=True)
    res = subprocess.run(["git", "commit", "-m", "knowledge: ann"], cwd=crepo,
                         capture_output=True, text=True)
    said = res.stdout + res.stderr
    assert res.returncode == 0, said
    assert "knowledge/people/ann.md:6: warning: link to knowledge/projects/plan.md" in said
    assert "knowledge/people/ann.md:7: warning: [[nobody-here]]" in said
    assert "[[atlas]]" not in said
    # a rename strands the link written in another file: that file:line is named
    subprocess.run(["git", "mv", "knowledge/procedures/release-steps.md",
                    "knowledge/procedures/shipping.md"], cwd=crepo, check=True)
    res = subprocess.run(["git", "commit", "-m", "knowledge: rename"], cwd=crepo,
                         capture_output=True, text=True)
    said = res.stdout + res.stderr
    assert res.returncode == 0, said
    assert ("knowledge/projects/atlas.md:7: warning: links to "
            "knowledge/procedures/release-steps.md, which this commit renamed to "
            "knowledge/procedures/shipping.md: update the link") in said, said


def test_search_lists_what_each_result_links_to(crepo) -> None:
    import json

    from conftest import invoke_memory

    _commit(crepo, {"knowledge/projects/atlas.md": ATLAS,
                    "knowledge/procedures/release-steps.md": STEPS})
    hits = json.loads(invoke_memory(crepo, "search", "--json", "--links", "atlas launch").stdout)
    atlas = next(h for h in hits if h["path"] == "knowledge/projects/atlas.md")
    assert atlas["links"] == ["knowledge/procedures/release-steps.md"]
    text = invoke_memory(crepo, "search", "--links", "atlas launch").stdout
    assert "links to: knowledge/procedures/release-steps.md" in text
    assert "links" not in json.loads(invoke_memory(crepo, "search", "--json", "atlas").stdout)[0]


def test_a_wikilink_resolves_by_name_or_tail_path_through_the_index(crepo) -> None:
    import json

    from conftest import invoke_memory

    _commit(crepo, {
        "knowledge/people/carol-jones.md": "---\ntype: person\nname: Carol\n---\n\n- Billing.\n",
        "knowledge/people/dan.md": "---\ntype: person\nname: Dan\n---\n\n"
        "- Works with [[Carol Jones]], [[people/carol-jones]] and [[projects/carol-jones]].\n"})
    out = json.loads(invoke_memory(crepo, "links", "--json", "knowledge/people/dan.md").stdout)
    assert [lk["path"] for lk in out["links"]] == [
        "knowledge/people/carol-jones.md", "knowledge/people/carol-jones.md", None]
    back = json.loads(invoke_memory(crepo, "links", "--json",
                                    "knowledge/people/carol-jones.md").stdout)["backlinks"]
    assert len(back) == 2 and {b["path"] for b in back} == {"knowledge/people/dan.md"}
