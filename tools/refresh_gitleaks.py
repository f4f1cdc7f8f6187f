"""Rebuild memrepo/data/gitleaks-rules.json from the vendored gitleaks.toml.

    python tools/refresh_gitleaks.py [SOURCE-DESCRIPTION]

To take a newer gitleaks rule set, copy upstream's ``config/gitleaks.toml`` over
``memrepo/data/gitleaks.toml`` first, then run this and the secrets tests
(``tests/test_secrets.py`` fails when the JSON and the TOML disagree).
SOURCE-DESCRIPTION (``gitleaks <commit> (v8.30.0-27) config/gitleaks.toml``) is stored in
the JSON's meta; by default the current one is kept. The JSON is what memrepo.secrets
loads: gitleaks' RE2 patterns translated to Python ``re`` syntax and checked to compile,
path-only rules left out.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from memrepo.atomic import atomic_write  # noqa: E402

if sys.version_info >= (3, 11):
    import tomllib
else:  # Python 3.10: tomli is a dev dependency
    import tomli as tomllib

#: What memrepo.secrets loads (its DATA / RULES_JSON), and the vendored upstream file.
DATA_DIR = ROOT / "memrepo" / "data"
RULES_JSON = DATA_DIR / "gitleaks-rules.json"
TOML = DATA_DIR / "gitleaks.toml"

#: POSIX classes (RE2 accepts them inside brackets; Python's ``re`` does not).
_POSIX = {
    "alnum": "a-zA-Z0-9", "alpha": "a-zA-Z", "digit": "0-9", "lower": "a-z", "upper": "A-Z",
    "xdigit": "0-9A-Fa-f", "word": r"\w", "space": r"\t\n\v\f\r ", "blank": r" \t",
    "punct": r"!-/:-@\[-`{-~", "cntrl": r"\x00-\x1f\x7f", "print": r" -~", "graph": r"!-~",
}
_FLAG_GROUP = re.compile(r"\(\?([imsU-]+)\)")


def go_to_python(src: str) -> str:
    """An RE2 (Go) pattern as Python ``re`` syntax (compile it with ``re.ASCII``).

    What differs in gitleaks' rules: ``(?i)`` in mid-pattern applies to the end of the
    enclosing group in RE2 (Python only allows it at the start, so it becomes a scoped
    ``(?i:…)``, closed and reopened around each ``|`` as RE2's flags carry across
    alternatives); POSIX classes ``[[:alnum:]]``; ``\\z`` is Python's ``\\Z``.
    """
    out: list[str] = []
    stack: list[list[str]] = [[]]  # per open group: the scoped flag groups opened in it
    i, n = 0, len(src)
    while i < n:
        c = src[i]
        if c == "\\":
            out.append(r"\Z" if src[i + 1 : i + 2] == "z" else src[i : i + 2])
            i += 2
        elif c == "[":
            j, buf = i + 1, ["["]
            if src[j : j + 1] == "^":
                buf.append("^")
                j += 1
            if src[j : j + 1] == "]":
                buf.append(r"\]")
                j += 1
            while src[j] != "]":
                if src[j] == "\\":
                    buf.append(src[j : j + 2])
                    j += 2
                elif src.startswith("[:", j):
                    k = src.index(":]", j)
                    buf.append(_POSIX[src[j + 2 : k]])
                    j = k + 2
                else:
                    buf.append("\\[" if src[j] == "[" else src[j])
                    j += 1
            out.append("".join(buf) + "]")
            i = j + 1
        elif c == "(":
            m = _FLAG_GROUP.match(src, i)
            if m and i > 0:
                out.append(f"(?{m[1]}:")
                stack[-1].append(m[1])
                i = m.end()
            else:
                stack.append([])
                out.append("(")
                i += 1
        elif c == ")":
            out.append(")" * len(stack.pop()) + ")")
            i += 1
        elif c == "|":
            opened = stack[-1]
            out.append(")" * len(opened) + "|" + "".join(f"(?{f}:" for f in opened))
            i += 1
        else:
            out.append(c)
            i += 1
    out.append(")" * len(stack[0]))
    return "".join(out)


def _allowlist_data(a: dict[str, Any]) -> dict[str, Any] | None:
    """One gitleaks allowlist as data; None when it only applies to paths or commits
    (memrepo scans texts, not a project tree) or needs them with AND."""
    if a.get("condition", "OR").upper() == "AND" and (a.get("paths") or a.get("commits")):
        return None
    if not (a.get("regexes") or a.get("stopwords")):
        return None
    return {
        "target": a.get("regexTarget", "secret"),
        "regexes": [go_to_python(p) for p in a.get("regexes", [])],
        "stopwords": [w.lower() for w in a.get("stopwords", [])],
    }


def gitleaks_rule_data(toml_text: str, source: str = "") -> dict[str, Any]:
    """gitleaks.toml as the JSON memrepo loads: regexes translated and checked to compile,
    path-only and path-gated rules left out (and counted)."""
    config = tomllib.loads(toml_text)
    rules, skipped = [], {}
    for r in config["rules"]:
        if "regex" not in r or "path" in r:
            skipped[r["id"]] = "applies to file paths (memrepo scans texts)"
            continue
        regex = go_to_python(r["regex"])
        try:
            compiled = re.compile(regex, re.ASCII)
        except re.error as exc:
            skipped[r["id"]] = f"does not compile in Python: {exc}"
            continue
        group = r.get("secretGroup", 0)
        if group > compiled.groups:
            skipped[r["id"]] = f"secretGroup {group} but {compiled.groups} groups"
            continue
        allowlists = [d for a in r.get("allowlists", []) if (d := _allowlist_data(a))]
        rules.append({
            "id": r["id"],
            "regex": regex,
            "keywords": sorted({k.lower() for k in r.get("keywords", [])}),
            "entropy": float(r.get("entropy", 0.0)),
            "secret_group": group,
            "groups": compiled.groups,
            "allowlists": allowlists,
        })
    g = config.get("allowlist", {})
    return {
        "meta": {"source": source, "min_version": config.get("minVersion", ""),
                 "rules_upstream": len(config["rules"]), "rules_used": len(rules),
                 "skipped": skipped},
        "global": {"regexes": [go_to_python(p) for p in g.get("regexes", [])],
                   "stopwords": [w.lower() for w in g.get("stopwords", [])]},
        "rules": rules,
    }


def _current_source() -> str:
    """The source description the JSON holds now ("" when it is missing or broken)."""
    try:
        return str(json.loads(RULES_JSON.read_text("utf-8"))["meta"]["source"])
    except (OSError, ValueError, KeyError, TypeError):
        return ""


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args and args[0] in ("-h", "--help"):
        print(__doc__)
        return 0
    source = args[0] if args else _current_source()
    data = gitleaks_rule_data(TOML.read_text("utf-8"), source)
    atomic_write(RULES_JSON, json.dumps(data, indent=1, sort_keys=True) + "\n")
    meta = data["meta"]
    print(f"{meta['rules_used']} of {meta['rules_upstream']} gitleaks rules; skipped: "
          + ", ".join(f"{k} ({v})" for k, v in meta["skipped"].items()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
