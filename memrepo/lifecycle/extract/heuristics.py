"""The offline path: cue phrases, names, lists and dates — weaker than a model, but free.

Exclusions follow seed 002: greetings and small talk, questions, speculative ideas,
raw file content (code blocks are dropped when the transcript is read) and anything that
looks like a secret are never extracted. What a speaker says of themselves becomes a fact
about them (:func:`informative`, :func:`about`, :func:`dated`); chatter (thanks, replies
addressed to the other, maxims) never does, and never reaches MEMORY.md (:func:`durable`).
docs/extraction.md says why, and how bench/quality/extraction.py measures it.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterator

from memrepo.secrets import states_credential
from memrepo.transcript.speakers import NOT_NAMES, speaker_names  # noqa: F401 - h.speaker_names

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
def _set(words: str) -> frozenset[str]:
    return frozenset(words.split())


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


def clean(sentence: str, speaker: str = "user", subject: str | None = None) -> str:
    """A sentence as a knowledge line: no markdown emphasis, first person made explicit
    (``subject``: who "I" is; the user's turns default to "User")."""
    s = re.sub(r"[*_`]{1,2}([^*_`]+)[*_`]{1,2}", r"\1", sentence).strip()
    s = re.sub(
        r"^(?:decision|decided|lesson(?: learned)?|todo|gotcha|note to self)\s*:\s*",
        "",
        s,
        flags=re.I,
    )
    s = re.sub(r"^(?:ok(?:ay)?|so|alright|right|great|good|well|oh|yeah|wow),?\s+", "", s,
               flags=re.I)
    subject = subject or (USER if speaker == "user" else None)
    if subject:
        s = about(s, subject)
    s = s.rstrip(" .;:!") + "."
    return s[:1].upper() + s[1:]


# ---------------------------------------------------------------------------
# Statements: what a speaker says of themselves, as a fact about them
# ---------------------------------------------------------------------------

#: Who "I" is in the user's turns when the chat does not name its speakers.
USER = "User"
_APOS = str.maketrans({"\u2019": "'", "\u2018": "'"})
FIRST_PERSON = re.compile(r"\b(?:I|I'm|I've|I'll|I'd|[Mm]y|me|[Mm]ine|[Mm]yself|[Ww]e|[Oo]ur"
                          r"|us|[Ww]e're|[Ww]e've|[Ww]e'll)\b")
SECOND_PERSON = re.compile(r"\b(?:you|your|yours|yourself|you're|you've|you'll|you'd|ya)\b",
                           re.I)
#: Social talk that states nothing to keep ("let's keep helping each other", "I need to
#: get going", "I love your turtles").
CHATTER = re.compile(
    r"\b(?:each other|in touch|keep (?:it )?up|keep (?:on )?going|catch up|talk (?:soon|later)"
    r"|hang out|get going|head out|take care|good luck|proud of|happy for|glad (?:to|that)"
    r"|glad \w+ could|let \w+ know|here (?:for|to (?:help|listen|lend|support))"
    r"|however (?:we|i) can|can (?:only )?imagine|i see,|can't wait|means a lot|so much fun"
    r"|thanks|thank|let's (?:do (?:it|this)|make it happen))\b|\blet's keep \w+(?:ing\b|in')",
    re.I,
)
#: A liking of something only pointed at ("I love that", "I love all the colours"): the
#: photo or remark it answers is not in the line.
POINTED = re.compile(
    r"\b(?:love|like|enjoy|adore|prefer|hate|dislike)s?\s+(?:it|that|this|these|those|them"
    r"|all|the way|how|what|when|seeing|hearing|reading about)\b",
    re.I,
)
#: Words that carry no fact: feelings, intensifiers, fillers and function words.
EMPTY = _set("""
    the and for that this with are was were have has had not but all can its from they
    them their what when how who will would about been into just also than then there
    here out our she her his him its it's i'm i've i'll i'd we're we've let's that's
    really so very too much many lot lots totally definitely absolutely super pretty
    quite such always never ever still even actually honestly literally kinda sorta
    happy glad great awesome amazing cool nice lovely wonderful fantastic incredible
    beautiful excited exciting thrilled proud sure thanks thank appreciate means mean
    feel feeling felt love loved hope hoping wish think thought know knew guess believe
    stuff things thing something anything everything make made get got going gonna
    wanna want keep doing done did does say said tell told like yeah yes wow hey
    good best better bad hard tough fun special important real true life time day
    today right now well way ways kind sort one ones some any every more most other
""")


def content_words(sentence: str) -> list[str]:
    """The words of ``sentence`` that may carry a fact (three letters or more)."""
    return [w for w in re.findall(r"[a-z][a-z'-]+", sentence.lower().translate(_APOS))
            if len(w) > 2 and w not in EMPTY]


SINGULAR = re.compile(r"\b(?:I|I'm|I've|I'll|I'd|[Mm]y|me|[Mm]ine|[Mm]yself)\b")
#: A plural statement that is a maxim, not a fact: "we can make a difference", "it helps
#: us grow", "it's nice to know we're in this together".
MAXIM = re.compile(
    r"\b(?:we|us) (?:all )?(?:can|could|should|gotta|must|need|have to|will)\b"
    r"|\b(?:help|give|bring|make|keep|remind|get|let)s? us\b"
    r"|^(?:it's|it is|that's|that is) (?:\w+ )?(?:to know|how|true|important|nice|great|"
    r"amazing|awesome|incredible|cool)\b",
    re.I,
)
WE = re.compile(r"\b(?:we|we're|we've|we'd|we'll)\b", re.I)
#: How a sentence starts when it only makes sense after the one before it.
LEANING = re.compile(r"^(?:it|it's|they|they're|that|that's|this|these|those|he|she|there"
                     r"|here|here's|their|its|no|yes|yeah|yep|nope)\b", re.I)
#: At least this many content words make a statement worth a line.
MIN_CONTENT = 3


def leaning(sentence: str) -> bool:
    """A sentence that only makes sense after the one before it ("They're my rock", "It
    was great"): it starts with a pronoun and says little else."""
    return bool(LEANING.match(sentence)) and len(set(content_words(sentence))) <= MIN_CONTENT


def informative(sentence: str) -> bool:
    """A speaker's statement about themselves worth keeping: it is in the first person
    ("we" as its subject, and no maxim: "we went camping" is a fact, "we can make a
    difference" or "it helps us grow" is not), names at least :data:`MIN_CONTENT`
    content words, and is not social talk addressed to the other ("you", thanks, "let's
    keep in touch")."""
    s = sentence.translate(_APOS)
    if excluded(s) or SECOND_PERSON.search(s) or CHATTER.search(s) or POINTED.search(s):
        return False
    if not SINGULAR.search(s) and (not WE.search(s) or MAXIM.search(s)):
        return False
    return len(set(content_words(s))) >= MIN_CONTENT


#: Between two named speakers, advice to the other ("don't forget to …") and a story's
#: turn ("turns out she …") are no lesson of the memory's owner.
TO_THE_OTHER = re.compile(r"^(?:and |so |just |oh,? )?(?:don't forget|remember to|make sure"
                          r"|stay|keep|never stop|(?:it )?turns out)\b", re.I)


def durable(sentence: str, who: str | None = None) -> bool:
    """A preference, decision or task that stays true after the chat: not social talk,
    not a liking of something only pointed at, not addressed to the other (``who``: the
    speaker, named in a relayed chat)."""
    s = sentence.translate(_APOS)
    if who not in (None, USER) and TO_THE_OTHER.match(s):
        return False
    return not (CHATTER.search(s) or POINTED.search(s) or SECOND_PERSON.search(s))


_ADVERBS = (r"really|also|just|still|always|never|finally|recently|actually|usually"
            r"|often|even|totally|absolutely|definitely|already|sometimes|now|truly|only")
_FIRST_I = re.compile(rf"\bI((?:\s+(?:{_ADVERBS}|[a-z]+ly\b))*)\s+([A-Za-z']+)")
_PAST = _set("""
    went was had did made got took saw felt found gave kept left met paid sent spent thought
    told won wrote built bought brought came chose drew drove ate fell flew grew heard held
    knew lost read ran sang sold spoke stood swam taught threw understood woke wore began
    became put set let hit cut quit hurt shut said could would should might must will can
    may shall caught fought slept lit led fed dealt meant used
""")
_AGREE = {"am": "is", "are": "is", "have": "has", "do": "does", "don't": "doesn't",
          "haven't": "hasn't", "wanna": "wants to", "gotta": "has to", "gonna": "is going to"}
_THEY = {"i'm": "they're", "i've": "they've", "i'll": "they'll", "i'd": "they'd",
         "i": "they", "me": "them", "my": "their", "mine": "theirs", "myself": "themselves"}
_REST = re.compile(r"\b(?:I am|I was|I'm|I've|I'll|I'd|I|me|[Mm]y|[Mm]ine|[Mm]yself)\b")


def _agree(verb: str) -> str:
    """``verb`` after a third-person singular subject ("love" -> "loves")."""
    low = verb.lower()
    if low in _AGREE:
        return _AGREE[low]
    if low in _PAST or low.endswith(("ed", "n't")) or not low.isalpha():
        return verb
    if re.search(r"(?:s|sh|ch|x|z|o)$", low):
        return verb + "es"
    if re.search(r"[^aeiou]y$", low):
        return verb[:-1] + "ies"
    return verb + "s"


def about(sentence: str, subject: str) -> str:
    """``sentence`` said by ``subject`` in the third person: the first "I" / "my" becomes
    the subject ("I love hiking" -> "Ana loves hiking", "my son" -> "Ana's son"), any
    later one "they" / "their"; a sentence in the first person plural gets a named
    speaker's ``Name: `` in front (the user's "we" is the user's and the agent's)."""
    s = sentence.translate(_APOS)
    first = re.search(r"\b(?:I'm|I've|I'll|I'd|I|[Mm]y|me|[Mm]ine|[Mm]yself)\b", s)
    if first is None:  # "we", "our" or nobody: a named speaker goes first
        return f"{subject}: {s}" if subject != USER and FIRST_PERSON.search(s) else s
    word, at = first.group(0), first.start()
    if word == "I":
        m = _FIRST_I.match(s, at)
        head = f"{subject}{m[1]} {_agree(m[2])}" if m else subject
        end = m.end() if m else at + 1
    else:
        head = {"I'm": f"{subject} is", "I've": f"{subject} has", "I'll": f"{subject} will",
                "I'd": f"{subject} would"}.get(word, f"{subject}'s" if word.lower() in (
                    "my", "mine") else subject)
        end = first.end()

    def they(m: re.Match[str]) -> str:
        w = m.group(0)
        if w in ("I am", "I was"):
            return "they are" if w == "I am" else "they were"
        return _THEY[w.lower()]

    return s[:at] + head + _REST.sub(they, s[end:])


_UNITS = r"(?:days?|weeks?|months?|years?)"
_NUMBER = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
           "seven": 7, "eight": 8, "nine": 9, "ten": 10, "a couple of": 2, "a few": 3}
_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
RELATIVE = re.compile(
    r"\b(?:yesterday|today|tonight|tomorrow|last night|this morning"
    rf"|(?:last|this|next|past) (?:week(?:end)?|month|year|{'|'.join(_WEEKDAYS)})"
    rf"|(?:\d+|a couple of|a few|an?|one|two|three|four|five|six|seven|eight|nine|ten)"
    rf" {_UNITS} ago)\b",
    re.I,
)


def _month(day: dt.date, shift: int) -> str:
    m = day.year * 12 + day.month - 1 + shift
    return dt.date(m // 12, m % 12 + 1, 1).strftime("%B %Y")


def resolve(phrase: str, day: dt.date) -> str | None:
    """The date a relative phrase said on ``day`` names ("last year" -> "2022")."""
    p = phrase.lower()
    days = {"yesterday": -1, "last night": -1, "today": 0, "tonight": 0, "this morning": 0,
            "tomorrow": 1}
    if p in days:
        return (day + dt.timedelta(days=days[p])).isoformat()
    which, _, unit = p.partition(" ")
    if unit in _WEEKDAYS:
        gap = (day.weekday() - _WEEKDAYS.index(unit)) % 7 or 7
        back = day - dt.timedelta(days=gap)
        return (back if which in ("last", "past") else back + dt.timedelta(days=7)).isoformat()
    step = {"last": -1, "past": -1, "this": 0, "next": 1}.get(which)
    if step is not None:
        monday = day - dt.timedelta(days=day.weekday())
        if unit == "week":
            return f"week of {monday + dt.timedelta(weeks=step)}"
        if unit == "weekend":
            sat = monday + dt.timedelta(days=5, weeks=step)
            return f"weekend of {sat}"
        return _month(day, step) if unit == "month" else str(day.year + step)
    m = re.match(rf"(.+) ({_UNITS}) ago", p)
    n = _NUMBER.get(m[1], int(m[1]) if m and m[1].isdigit() else 0) if m else 0
    if not n:
        return None
    unit = m[2].rstrip("s")
    if unit == "day":
        return (day - dt.timedelta(days=n)).isoformat()
    if unit == "week":
        return f"around {day - dt.timedelta(weeks=n)}"
    return _month(day, -n) if unit == "month" else str(day.year - n)


def dated(sentence: str, day: str) -> str:
    """``sentence`` with each relative date followed by the date it names, as said on
    ``day`` (YYYY-MM-DD): "yesterday" -> "yesterday (2023-05-07)"."""
    try:
        when = dt.date.fromisoformat(day)
    except ValueError:
        return sentence

    def add(m: re.Match[str]) -> str:
        found = resolve(m.group(0), when)
        return f"{m.group(0)} ({found})" if found else m.group(0)

    return RELATIVE.sub(add, sentence)


def unnamed(text: str, name: str | None) -> str:
    """``text`` without its ``Name: `` prefix when ``name`` is its speaker."""
    if name and text.startswith(name + ":"):
        return text[len(name) + 1:].lstrip()
    return text


def person_mentions(sentence: str, common: frozenset[str] = frozenset()
                    ) -> list[tuple[str, str]]:
    """(name, relationship or '') for each person the sentence talks about.

    A name is a person's when a cue says so ("my friend Ana", "Ana is my sister", "Ana
    said"), it is no word of ``common`` (the words its transcript also writes in lower
    case: "acting", "man" of "Iron Man" are words, not names) and, for "X is my …",
    the relationship is one a person has (a friend, a manager, an accountant; not a
    passion or a favourite).
    """
    found: dict[str, str] = {}
    for i, pat in enumerate(PERSON_CUES):
        for m in pat.finditer(sentence):
            name = m["name"].strip()
            first = name.split()[0]
            if first in NOT_NAMES or name in NOT_NAMES or (i and not_a_name(name, common)):
                continue
            rel = " ".join(
                w
                for w in (m.groupdict().get("rel") or "").split()
                if w not in ("and", "but", "who", "he", "she", "they", "so", "of")
            )
            if i == 1 and not person_noun(rel):
                continue
            if rel and rel.split()[0] in ("best", "new", "only", "same", "first", "one"):
                rel = ""
            found.setdefault(name, rel)
            if rel and not found[name]:
                found[name] = rel
    return list(found.items())


#: What a person is to someone: "Ana is my <one of these>" names a person.
RELATIONS = _set("""
    friend colleague manager boss wife husband partner client coworker cofounder co-founder
    sister brother mother father mom mum dad mommy daddy son daughter kid child cousin
    aunt uncle niece nephew grandma grandpa grandmother grandfather grandson granddaughter
    girlfriend boyfriend fiance fiancee fiancé fiancée spouse neighbor neighbour roommate
    flatmate classmate teammate mentor mentee coach buddy pal lead ceo cto cfo vp pm
    intern assistant guy girl lady man woman sibling twin parent stepmom stepdad owner
    tenant landlord landlady nanny babysitter therapist doctor nurse dentist vet
    accountant consultant student president resident agent attendant sergeant lieutenant
    """)
#: Words ending like a person's trade (-er, -or, -ist) that are not one.
NOT_TRADES = _set("""
    answer number power center centre color colour order error other favorite favourite
    corner chapter letter matter paper water winter summer river dinner career computer
    monster poster sticker trailer weather wonder character sister-in-law
    """)


def person_noun(rel: str) -> bool:
    """Whether ``rel`` ("database administrator", "sister") is what a person is."""
    last = rel.split()[-1] if rel else ""
    if last in RELATIONS:
        return True
    return bool(re.search(r"(?:er|or|ist|ian|ee)$", last)) and last not in NOT_TRADES


def not_a_name(name: str, common: frozenset[str]) -> bool:
    """A capitalised phrase that is words, not a name: one of its words is written in
    lower case elsewhere in the same transcript ("Acting is my passion" … "acting")."""
    return any(w.lower() in common for w in name.split())


def common_words(text: str) -> frozenset[str]:
    """The words ``text`` writes in lower case (a name is capitalised wherever it is)."""
    return frozenset(re.findall(r"(?<![\w'’])[a-z][a-z'’-]+", text))


def numbered_steps(text: str) -> list[str]:
    return [m["step"].strip() for line in text.split("\n") if (m := NUMBERED.match(line))]
