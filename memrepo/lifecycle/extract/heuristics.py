"""The offline path: cue phrases, names, lists and dates — weaker than a model, but free.

Exclusions follow seed 002: greetings and small talk, questions, speculative ideas,
raw file content (code blocks are dropped when the transcript is read) and anything that
looks like a secret are never extracted.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from memrepo.secrets import states_credential

DECISION = re.compile(
    r"\b(?:(?:we|i)(?:'ve| have| 'll| will)? (?:decided|agreed|chose|settled on)"
    r"|(?:we|i)(?:'re| are) going (?:with|to go with)"
    r"|let'?s (?:go with|use|switch to|stick with|adopt|keep|move to)"
    r"|decision:|decided:|going forward,? we|we will use|we'll use)\b",
    re.I,
)
LESSON = re.compile(
    r"\b(?:lesson(?: learned)?:|learned that|turns out|the (?:root cause|fix) was"
    r"|note to self|next time,? |in the future,? |(?:we|you|i) should (?:always|never)"
    r"|always \w+ before|never \w+ without|don'?t forget to|gotcha:)",
    re.I,
)
PREFERENCE = re.compile(
    r"\b(?:i (?:really )?(?:prefer|like|love|hate|dislike|don'?t like|want you to)"
    r"|please (?:always|never|don'?t)|from now on)\b",
    re.I,
)
TASK = re.compile(
    r"\b(?:todo:?|to-do|action item|next step(?:s)? (?:is|are)|follow up (?:on|with)"
    r"|remind me to|(?:i|we) (?:still )?need to|don'?t forget)\b",
    re.I,
)
FACT = re.compile(
    r"\b(?:runs on|is hosted (?:on|at)|is deployed (?:to|on)|lives (?:in|at)|is located"
    r"|endpoint is|url is|listens on|port \d+|version \d|is at https?://|is stored in"
    r"|is configured (?:in|with)|the (?:\w+ )?(?:address|host|path|limit|timeout) is)\b",
    re.I,
)
SPECULATIVE = re.compile(
    r"\b(?:maybe|might|perhaps|what if|could we|i wonder|not sure|probably|brainstorm"
    r"|one idea|just an idea|hypothetically|someday)\b",
    re.I,
)
SMALL_TALK = re.compile(
    r"^(?:hi|hello|hey|thanks|thank you|great|ok|okay|cool|nice|good (?:morning|night|job)"
    r"|bye|cheers|sounds good|perfect|that's a wrap|awesome)\b",
    re.I,
)
HOWTO = re.compile(
    r"\b(?:how (?:do|can|should) (?:i|we|you)|steps? (?:to|for)|procedure for|how to"
    r"|runbook for|checklist for)\s+(?P<what>[^?.!\n]+)",
    re.I,
)
NUMBERED = re.compile(r"^\s*\d+[.)]\s+(?P<step>.+)$")
PERSON_CUES = [
    re.compile(
        r"\b(?:my|our) (?P<rel>colleague|manager|boss|friend|wife|husband|partner"
        r"|client|coworker|co-?founder|accountant|designer|lawyer|sister|brother"
        r"|mother|father|teammate|lead)\s+(?P<name>[A-Z][a-z]+(?: [A-Z][a-z]+)?)"
    ),
    re.compile(
        r"\b(?P<name>[A-Z][a-z]+(?: [A-Z][a-z]+)?)\s+(?:is|was) (?:my|our|the)"
        r" (?P<rel>[a-z]+(?: [a-z]+)?)"
    ),
    re.compile(
        r"\b(?P<name>[A-Z][a-z]+(?: [A-Z][a-z]+)?)\s+(?:prefers|likes|wants|said|"
        r"mentioned|asked|told me|thinks|works (?:on|at|in)|is responsible for"
        r"|will review|needs)\b"
    ),
]
NOT_NAMES = frozenset(
    [
        "I",
        "We",
        "You",
        "They",
        "He",
        "She",
        "It",
        "The",
        "This",
        "That",
        "These",
        "Those",
        "Let",
        "Lets",
        "Okay",
        "Ok",
        "Great",
        "Thanks",
        "Please",
        "Also",
        "And",
        "But",
        "So",
        "Then",
        "Now",
        "Today",
        "Tomorrow",
        "Yesterday",
        "Monday",
        "Tuesday",
        "Wednesday",
        "Thursday",
        "Friday",
        "Saturday",
        "Sunday",
        "Here",
        "There",
        "What",
        "When",
        "Where",
        "Why",
        "How",
        "Which",
        "Who",
        "Our",
        "My",
        "Your",
        "Agent",
        "User",
        "System",
        "Yes",
        "No",
        "Sure",
        "Good",
        "Next",
        "Done",
        "Note",
        "If",
        "Use",
        "Run",
        "Check",
        "Team",
        "Everyone",
        "Nobody",
        "Someone",
        "Git",
        "Python",
        "Docker",
        "Postgres",
        "Postgresql",
        "Redis",
        "Linux",
        "Github",
        "Slack",
    ]
)


def sentences(text: str) -> Iterator[str]:
    """Sentences and list items of a turn's text (markdown bullets become sentences)."""
    for raw in text.split("\n"):
        line = re.sub(r"^\s*(?:[-*+]|\d+[.)])\s+", "", raw).strip()
        line = re.sub(r"^#+\s+", "", line)
        if not line or line.startswith((">", "|")):
            continue
        for part in re.split(r"(?<=[.!?])\s+(?=[A-Z\"'(])", line):
            part = part.strip()
            if part:
                yield part


def excluded(sentence: str) -> bool:
    """Seed 002 exclusions: small talk, questions, speculation, secrets, fragments."""
    s = sentence.strip()
    if len(s.split()) < 4 or s.endswith("?"):
        return True
    if SMALL_TALK.match(s) and len(s.split()) < 8:
        return True
    if SPECULATIVE.search(s):
        return True
    # a secret, or a sentence stating a credential's value ("the password is hunter2")
    return "[REDACTED:" in s or states_credential(s)


def clean(sentence: str, speaker: str = "user") -> str:
    """A sentence as a knowledge line: no markdown emphasis, first person made explicit."""
    s = re.sub(r"[*_`]{1,2}([^*_`]+)[*_`]{1,2}", r"\1", sentence).strip()
    s = re.sub(
        r"^(?:decision|decided|lesson(?: learned)?|todo|gotcha|note to self)\s*:\s*",
        "",
        s,
        flags=re.I,
    )
    s = re.sub(r"^(?:ok(?:ay)?|so|alright|right|great|good),?\s+", "", s, flags=re.I)
    if speaker == "user":
        s = re.sub(r"^I(?:'m| am)\b", "User is", s)
        s = re.sub(
            r"^I (?:really )?(prefer|like|love|hate|want|need|think|use|dislike)\b",
            lambda m: f"User {m[1]}s",
            s,
        )
        s = re.sub(r"^I don'?t\b", "User does not", s)
        s = re.sub(r"^I\b", "User", s)
    s = s.rstrip(" .;:") + "."
    return s[:1].upper() + s[1:]


def person_mentions(sentence: str) -> list[tuple[str, str]]:
    """(name, relationship or '') for each person the sentence talks about."""
    found: dict[str, str] = {}
    for pat in PERSON_CUES:
        for m in pat.finditer(sentence):
            name = m["name"].strip()
            first = name.split()[0]
            if first in NOT_NAMES or name in NOT_NAMES:
                continue
            rel = " ".join(
                w
                for w in (m.groupdict().get("rel") or "").split()
                if w not in ("and", "but", "who", "he", "she", "they", "so", "of")
            )
            if rel and rel.split()[0] in ("best", "new", "only", "same", "first", "one"):
                rel = ""
            found.setdefault(name, rel)
            if rel and not found[name]:
                found[name] = rel
    return list(found.items())


def numbered_steps(text: str) -> list[str]:
    return [m["step"].strip() for line in text.split("\n") if (m := NUMBERED.match(line))]
