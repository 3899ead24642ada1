#!/usr/bin/env python3
"""Lists every `.unwrap()` / `.expect(` in src/ outside `#[cfg(test)]` modules (inline, or in a
module's own `tests.rs`, which is only declared as `#[cfg(test)] mod tests;`) and fails when
one is not in scripts/unwrap-allowlist.txt (lines `path<TAB>trimmed source line`). Each allowed
site is an invariant of the code (a contiguous array after `standard_layout`, a non-empty
result after validation), never user-controlled data: user input must give an `Err`.
`--update` rewrites the allowlist from the current sources (review the diff before committing).
"""
import os
import re
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
ALLOW = os.path.join(ROOT, "scripts", "unwrap-allowlist.txt")
PATTERN = re.compile(r"\.unwrap\(\)|\.expect\(")


def sites():
    found = []
    for root, _, files in sorted(os.walk(os.path.join(ROOT, "src"))):
        for name in sorted(files):
            if not name.endswith(".rs") or name == "tests.rs":
                continue
            path = os.path.join(root, name)
            rel = os.path.relpath(path, ROOT)
            lines = open(path, encoding="utf-8").read().split("\n")
            # The first inline test module (a `#[cfg(test)] mod tests;` declaration exempts only
            # its own file).
            end = next(
                (
                    i
                    for i, l in enumerate(lines)
                    if l.strip() == "#[cfg(test)]" and i + 1 < len(lines) and lines[i + 1].rstrip().endswith("{")
                ),
                len(lines),
            )
            for i, line in enumerate(lines[:end]):
                text = line.strip()
                if PATTERN.search(text) and not text.startswith("//"):
                    found.append((rel, text, i + 1))
    return found


def main():
    current = sites()
    if "--update" in sys.argv:
        with open(ALLOW, "w", encoding="utf-8") as f:
            for rel, text, _ in current:
                f.write(f"{rel}\t{text}\n")
        print(f"wrote {len(current)} allowed sites to {os.path.relpath(ALLOW, ROOT)}")
        return 0
    allowed = {}
    for line in open(ALLOW, encoding="utf-8").read().splitlines():
        if line.strip():
            key = tuple(line.split("\t", 1))
            allowed[key] = allowed.get(key, 0) + 1
    bad = []
    for rel, text, lineno in current:
        key = (rel, text)
        if allowed.get(key, 0) > 0:
            allowed[key] -= 1
        else:
            bad.append(f"{rel}:{lineno}: {text}")
    print(f"unwrap/expect sites outside tests: {len(current)}, not in the allowlist: {len(bad)}")
    for b in bad:
        print("  " + b)
    if bad:
        print("Return an Err for anything user input can reach; for a true invariant, add the line to "
              "scripts/unwrap-allowlist.txt (or run with --update and review the diff).")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
