#!/usr/bin/env python3
"""Fails when a Swift snippet in the README or in a DocC article has drifted from the compiled file
it was taken from.

Each ```swift block preceded by `<!-- compiled: PATH -->` must appear in PATH line for line (as a
contiguous run of lines, whitespace at line ends ignored; a run indented inside a function matches
its snippet written flush left). CI builds those files, so a snippet that passes here compiles. A
```swift block without such a marker fails: no snippet may rot. Checked: README.md and every
article of every documentation catalog (Sources/*/*.docc/*.md), or the files given.
"""
import glob
import re
import sys

def dedent(lines):
    indents = [len(l) - len(l.lstrip(" ")) for l in lines if l.strip()]
    cut = min(indents) if indents else 0
    return [l[cut:] for l in lines]

def check(document):
    text = open(document, encoding="utf-8").read()
    failures = 0
    blocks = list(re.finditer(r"(<!-- compiled: (\S+) -->\n)?```swift\n(.*?)```", text, re.S))
    for m in blocks:
        path, body = m.group(2), m.group(3)
        line = text[: m.start()].count("\n") + 1
        if path is None:
            print(f"{document}:{line}: swift snippet without a '<!-- compiled: PATH -->' marker")
            failures += 1
            continue
        try:
            source = [l.rstrip() for l in open(path, encoding="utf-8").read().splitlines()]
        except OSError as e:
            print(f"{document}:{line}: {path}: {e}")
            failures += 1
            continue
        snippet = dedent([l.rstrip() for l in body.rstrip("\n").splitlines()])
        n = len(snippet)
        if not any(dedent(source[i:i + n]) == snippet for i in range(len(source) - n + 1)):
            print(f"{document}:{line}: the snippet is not in {path} as written")
            failures += 1
    return len(blocks), failures

def main(*documents):
    documents = list(documents) or ["README.md"] + sorted(glob.glob("Sources/*/*.docc/*.md"))
    total = failed = 0
    for document in documents:
        blocks, failures = check(document)
        total += blocks
        failed += failures
    print(f"swift snippets in {len(documents)} documents: {total - failed} of {total} match compiled files")
    return 1 if failed else 0

if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
