#!/usr/bin/env python3
"""Every section of the design a comment or doc cites exists (`make lint`).

Code and docs cite docs/design.md as `DESIGN §3k`, `design.md §3i.2`, `§9.1` or `§3`: a section
is a heading `## 3.` / `### 3k.` of docs/design.md, and `.N` is the item numbered N in that
section. Reads the given files and folders (`.rs`, `.md`, `.yaml`, `.sh`, `.py`, Makefile),
prints each citation that names no section, and exits 1 when there is one.
"""
import os, re, sys

root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
design = open(os.path.join(root, "docs", "design.md")).read().split("\n")

sections = {}  # "3k" -> set of item numbers in it
current = None
for line in design:
    m = re.match(r"^#{2,3} (\d+[a-z]?)\. ", line)
    if m:
        current = m.group(1)
        sections[current] = set()
        continue
    m = re.match(r"^\s{0,3}(\d+)\. ", line)
    if m and current is not None:
        sections[current].add(m.group(1))

CITE = re.compile(r"§ ?(\d+[a-z]?)(?:\.(\d+))?")
bad = 0
paths = sys.argv[1:] or ["crates", "charts", "hack", "Makefile", "README.md", "docs"]


def files(path):
    if os.path.isfile(path):
        yield path
        return
    for d, dirs, fs in os.walk(path):
        dirs[:] = [x for x in dirs if x not in ("target", ".git", "node_modules")]
        for f in fs:
            if f.endswith((".rs", ".md", ".yaml", ".sh", ".py", ".txt")) or f == "Makefile":
                yield os.path.join(d, f)


for path in paths:
    for p in files(os.path.join(root, path) if not os.path.isabs(path) else path):
        rel = os.path.relpath(p, root)
        # The team's DESIGN.md lives outside the repo; docs/design.md mirrors its numbering.
        for n, line in enumerate(open(p, errors="replace"), 1):
            for m in CITE.finditer(line):
                section, item = m.group(1), m.group(2)
                if section not in sections:
                    print(f"{rel}:{n}: §{m.group(0)[1:].strip()}: no section {section} in docs/design.md")
                    bad += 1
                elif item and item not in sections[section]:
                    print(f"{rel}:{n}: §{section}.{item}: section {section} has no item {item}")
                    bad += 1
print(f"design citations: {bad} naming no section of docs/design.md")
sys.exit(1 if bad else 0)
