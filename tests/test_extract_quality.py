"""Offline extraction writes facts, not noise (issue 39): who said what and when, people
only when they are people, no chatter in MEMORY.md, no "Session: <title>" lines, and the
journal day written once by the session-end extraction and ``condense daily`` together."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from conftest import invoke_memory, run_git

from memrepo.layout import MEMORY_FILE
from memrepo.lifecycle import condense as C
from memrepo.lifecycle.extract import heuristics as h
from memrepo.lifecycle.extract.runner import extract
from memrepo.llm import for_repo

SID = "cc-0123456789ab"
REF = f"2023/05/08/1356-{SID}"
JOURNAL = "knowledge/journal/2023-05-08.md"


def transcript(root: Path, turns: list[tuple[str, str]], sid: str = SID,
               hhmm: str = "1356") -> str:
    """A closed transcript of ``turns`` (role, text) on 2023-05-08, committed; its path."""
    rel = f"raw/conversations/2023/05/08/{hhmm}-{sid}-chat.md"
    start = dt.datetime(2023, 5, 8, int(hhmm[:2]), int(hhmm[2:]))
    body = "".join(f"## {start + dt.timedelta(minutes=i):%H:%M} — {role}\n{text}\n\n"
                   for i, (role, text) in enumerate(turns))
    text = (f"---\nsession_id: {sid}\nstarted: 2023-05-08T{hhmm[:2]}:{hhmm[2:]}:00+00:00\n"
            f"ended: {start + dt.timedelta(minutes=len(turns)):%Y-%m-%dT%H:%M}:00+00:00\ntimezone: Etc/UTC\nchannel: claude-code"
            f"\ntags: []\n---\n\n# Chat\n\n{body}")
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    run_git(root, "add", "-A", "raw")
    run_git(root, "commit", "-q", "--no-verify", "-m", f"conversation: {sid}")
    return rel


def knowledge(root: Path) -> str:
    return "\n".join(p.read_text(encoding="utf-8") for p in sorted((root / "knowledge").rglob("*.md"))
                     if "identity" not in p.parts)


CHAT = [
    ("user", "Caroline: Hey Mel! Good to see you! How have you been?"),
    ("agent", "Melanie: Hey Caroline! I'm swamped with the kids & work. What's up with you?"),
    ("user", "Caroline: I went to a LGBTQ support group yesterday and it was so powerful."),
    ("agent", "Melanie: Wow! I love your turtles so much! Let's keep motivating and helping "
              "each other out as we journey through life."),
    ("user", "Caroline: Acting is my passion, and Iron Man says it best. My friend Ana Souza "
             "said she would join the acting class with me. Iron Man is a great movie about "
             "a man in a suit."),
    ("agent", "Melanie: I painted a lake sunrise last year. It is special to me."),
    ("user", "Caroline: I love that! Thanks, Mel, talk soon!"),
]


def test_facts_carry_their_speaker_their_date_and_their_session(crepo: Path) -> None:
    extract(crepo, [transcript(crepo, CHAT)], for_repo(crepo, offline=True))
    journal = (crepo / JOURNAL).read_text(encoding="utf-8")
    assert (f"- Caroline went to a LGBTQ support group yesterday (2023-05-07) and it was so "
            f"powerful. [src: {REF}]") in journal
    assert f"- Melanie painted a lake sunrise last year (2022). [src: {REF}]" in journal
    assert "Melanie is swamped with the kids & work." in journal
    # the greeting, the compliment and the goodbye are no facts
    assert "Good to see you" not in journal and "turtles" not in journal
    assert "talk soon" not in journal


def test_people_files_only_for_people(crepo: Path) -> None:
    """"Acting is my passion", "Iron Man says": words, not people; "my friend Ana Souza"
    is one."""
    extract(crepo, [transcript(crepo, CHAT)], for_repo(crepo, offline=True))
    people = sorted(p.name for p in (crepo / "knowledge/people").glob("*.md"))
    assert people == ["_index.md", "ana-souza.md"]
    index = (crepo / "knowledge/people/_index.md").read_text(encoding="utf-8")
    assert "Ana Souza" in index and "Iron Man" not in index and "Acting" not in index


def test_person_cues_need_a_person() -> None:
    common = h.common_words("acting is fun; the man in the suit")
    assert h.person_mentions("Acting is my passion.", common) == []
    assert h.person_mentions("Iron Man said it best.", common) == []
    assert h.person_mentions("Family is the most important thing for me.") == []
    assert h.person_mentions("Alice Martin is our database administrator.") == [
        ("Alice Martin", "database administrator")]
    assert h.person_mentions("Ana is my sister.") == [("Ana", "sister")]


def test_chatter_never_reaches_memory(crepo: Path) -> None:
    turns = [
        ("user", "I love your turtles so much!"),
        ("agent", "Thanks! They are the best."),
        ("user", "Let's keep motivating and helping each other out as we journey through life."),
        ("user", "I love all the yellow leaves, it looks so cozy."),
        ("user", "I prefer tabs over spaces in every Python file."),
        ("user", "We decided to use PostgreSQL for the ledger database."),
    ]
    extract(crepo, [transcript(crepo, turns)], for_repo(crepo, offline=True))
    memory = (crepo / MEMORY_FILE).read_text(encoding="utf-8")
    assert "turtles" not in memory and "each other" not in memory and "yellow" not in memory
    assert "User prefers tabs over spaces in every Python file." in memory
    assert "We decided to use PostgreSQL for the ledger database." in memory
    proc = invoke_memory(crepo, "condense", "weekly", "--date", "2023-05-08", "--offline")
    assert proc.returncode == 0, proc.stderr
    memory = (crepo / MEMORY_FILE).read_text(encoding="utf-8")
    assert "turtles" not in memory and "each other" not in memory


def test_no_entry_only_restates_a_title_or_a_count(crepo: Path) -> None:
    """A session of small talk leaves no "Session: <title> (N user turns)" line: no
    journal at all."""
    turns = [("user", "Hi there!"), ("agent", "Hello! How are you?"), ("user", "Good, thanks.")]
    report = extract(crepo, [transcript(crepo, turns)], for_repo(crepo, offline=True))
    assert report.written == [] and not (crepo / JOURNAL).exists()
    assert "user turns" not in knowledge(crepo)


def test_condense_daily_leaves_the_extracted_sessions_to_their_extraction(crepo: Path) -> None:
    """The session-end extraction writes a session's bullets; ``condense daily`` writes
    those of the sessions no extraction processed, so the day is written once."""
    first = transcript(crepo, CHAT)
    extract(crepo, [first], for_repo(crepo, offline=True))
    journal = (crepo / JOURNAL).read_text(encoding="utf-8")
    plan = C.daily(crepo, dt.date(2023, 5, 8), None)
    assert plan.texts == {} and "1 of 1 sessions written by their extraction" in plan.notes[0]
    head = run_git(crepo, "rev-parse", "HEAD").stdout
    proc = invoke_memory(crepo, "condense", "daily", "--date", "2023-05-08", "--offline")
    assert proc.returncode == 0 and "no changes" in proc.stdout
    assert run_git(crepo, "rev-parse", "HEAD").stdout == head
    # a session extraction has not seen yet: daily writes its bullets, and only its
    later = transcript(crepo, [("user", "I moved to Lisbon last month and I started a new job "
                                        "at the harbour office.")], "cc-ba9876543210", "1800")
    plan = C.daily(crepo, dt.date(2023, 5, 8), None)
    text = plan.texts[JOURNAL]
    assert "User moved to Lisbon last month (April 2023)" in text and "cc-ba9876543210" in text
    assert text.count("went to a LGBTQ support group") == journal.count(
        "went to a LGBTQ support group") == 1
    assert later


def test_first_person_becomes_the_speaker() -> None:
    assert h.about("I really love hiking with my dog.", "Ana") == \
        "Ana really loves hiking with their dog."
    assert h.about("My son turned five and I am proud.", "Ana") == \
        "Ana's son turned five and they are proud."
    assert h.about("I've been running a lot lately.", "Jon") == "Jon has been running a lot lately."
    assert h.about("I slowly formed connections.", "Maria") == "Maria slowly formed connections."
    assert h.about("We went camping.", "Mel") == "Mel: We went camping."
    assert h.about("We decided to use PostgreSQL.", h.USER) == "We decided to use PostgreSQL."


def test_relative_dates_are_resolved() -> None:
    day = "2023-05-08"  # a Monday
    assert h.dated("I went there yesterday.", day) == "I went there yesterday (2023-05-07)."
    assert h.dated("We met last Saturday.", day) == "We met last Saturday (2023-05-06)."
    assert h.dated("It was last year.", day) == "It was last year (2022)."
    assert h.dated("See you next month.", day) == "See you next month (June 2023)."
    assert h.dated("I started three years ago.", day) == "I started three years ago (2020)."
    assert h.dated("Last weekend was fun.", day) == "Last weekend (weekend of 2023-05-06) was fun."


def test_a_speaker_is_a_name_that_starts_most_of_a_roles_turns() -> None:
    turns = [("user", "Decision: we use Postgres."), ("user", "And the cache stays."),
             ("agent", "Mel: Sure."), ("agent", "Mel: Done.")]
    assert h.speaker_names(turns) == {"agent": "Mel"}


def test_advice_to_the_other_speaker_is_no_lesson() -> None:
    """Between named speakers, "don't forget to …" is said to the other one: not a lesson
    of the memory's owner; the user's own reminder still is one."""
    assert not h.durable("And don't forget to stay positive and motivate others.", "Jon")
    assert not h.durable("Turns out she had no other family.", "Maria")
    assert not h.durable("Let's keep movin' forward!", "Gina")
    assert h.durable("Don't forget to run the migrations first.", h.USER)
    assert h.durable("Let's keep the old API for now.", h.USER)


def test_the_extraction_measure_counts_what_the_llm_path_writes(crepo: Path) -> None:
    """The plumbing of bench/quality/extraction.py with LLM use on: the session end's one
    request (all extractors, the real SDK against a canned transport) writes entries with
    their source, and the measure maps them to the session and matches the observation.
    Real-model quality is measured only where a key exists, never here."""
    import json
    import sys

    from conftest import fake_anthropic

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench" / "quality"))
    from extraction_match import Conversation, Matcher, Ref, derived, measure, person_files

    answer = {"decisions": [], "lessons": [], "procedures": [], "people": [], "journal": [],
              "facts": [{"text": "Caroline attended an LGBTQ support group on 2023-05-07."}]}
    seen: list[dict] = []
    llm = for_repo(crepo, client=fake_anthropic(json.dumps(answer), seen))
    rel = transcript(crepo, CHAT)
    extract(crepo, [rel], llm, one_request=True)
    assert len(seen) == 1  # one request for every extractor
    obs = Ref(1, "observation", "Caroline attended an LGBTQ support group.", ("D1:3",))
    conv = Conversation({1: [obs]}, {"D1:3": (1, CHAT[2][1])}, ("Caroline", "Melanie"))
    entries = derived(crepo, lambda ref: 1 if SID in ref else None)
    llm_entries = [e for e in entries if "attended an LGBTQ support group" in e.text]
    assert llm_entries and all(e.sessions == frozenset({1}) for e in llm_entries)
    got = measure(entries, person_files(crepo), conv, Matcher(frozenset({"caroline"})), {})
    assert got["observation recall %"] == 100.0
    assert got["precise by"]["observation"] >= 1
