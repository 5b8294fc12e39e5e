#!/usr/bin/env python3
"""Fails when a Swift snippet in the README has drifted from the compiled file it was taken from.

Each ```swift block preceded by `<!-- compiled: PATH -->` must appear in PATH line for line (as a
contiguous run of lines, whitespace at line ends ignored). CI builds those files, so a snippet
that passes here compiles. A ```swift block without such a marker fails: no snippet may rot.
"""
import re
import sys

def main(readme="README.md"):
    text = open(readme, encoding="utf-8").read()
    failures = 0
    blocks = list(re.finditer(r"(<!-- compiled: (\S+) -->\n)?```swift\n(.*?)```", text, re.S))
    for m in blocks:
        path, body = m.group(2), m.group(3)
        line = text[: m.start()].count("\n") + 1
        if path is None:
            print(f"README.md:{line}: swift snippet without a '<!-- compiled: PATH -->' marker")
            failures += 1
            continue
        try:
            source = [l.rstrip() for l in open(path, encoding="utf-8").read().splitlines()]
        except OSError as e:
            print(f"README.md:{line}: {path}: {e}")
            failures += 1
            continue
        snippet = [l.rstrip() for l in body.rstrip("\n").splitlines()]
        if not any(source[i:i + len(snippet)] == snippet for i in range(len(source) - len(snippet) + 1)):
            print(f"README.md:{line}: the snippet is not in {path} as written")
            failures += 1
    print(f"readme snippets: {len(blocks) - failures} of {len(blocks)} match compiled files")
    return 1 if failures else 0

if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
