"""Check the commit messages since the history's convention began: an imperative subject of
at most 72 characters, a blank line before the body. Run by deploy/local/test.sh.

    python deploy/local/check_commits.py [BASE]

``BASE`` (default: the first line of deploy/local/commits-since) is the last commit before the
convention; every commit after it up to HEAD is checked. A clone without that commit (a
shallow one) is told so and passes: it cannot see the history to check.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

MAX_SUBJECT = 72
SINCE = Path(__file__).with_name("commits-since")
# A subject starts with a verb in the imperative: "Add", not "Added" or "Adding".
NOT_IMPERATIVE = ("ed", "ing")


def problems(message: str) -> list[str]:
    lines = message.splitlines()
    subject = lines[0] if lines else ""
    found = []
    if not subject.strip():
        found.append("empty subject")
    if len(subject) > MAX_SUBJECT:
        found.append(f"subject of {len(subject)} characters (at most {MAX_SUBJECT})")
    first = subject.split(" ", 1)[0]
    if first.lower().endswith(NOT_IMPERATIVE) and first[:1].isupper():
        found.append(f"subject starts with {first!r}: say what the commit does ('Add ...')")
    if subject.endswith("."):
        found.append("subject ends with a period")
    if len(lines) > 1 and lines[1].strip():
        found.append("no blank line between subject and body")
    return found


def main(argv: list[str]) -> int:
    base = argv[1] if len(argv) > 1 else SINCE.read_text().split()[0]
    known = subprocess.run(
        ["git", "cat-file", "-e", f"{base}^{{commit}}"], capture_output=True, check=False
    )
    if known.returncode != 0:
        print(f"commit messages: {base} is not in this clone (shallow?); not checked")
        return 0
    log = subprocess.run(
        ["git", "log", "--format=%H%x00%B%x01", f"{base}..HEAD"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    bad = 0
    for entry in filter(None, (e.strip("\n") for e in log.split("\x01"))):
        sha, _, message = entry.partition("\x00")
        for problem in problems(message):
            bad += 1
            print(f"commit {sha[:10]} ({message.splitlines()[0][:60]!r}): {problem}")
    print(f"commit messages since {base[:10]}: {bad} problem(s)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
