#!/usr/bin/env python3
"""Production functions and files that grew too long (`make lint`; issue #42's limits).

For each `src/` folder given: every `.rs` file outside `src/bin`, `tests.rs`, `tests/` folders and
the trailing `#[cfg(test)] mod tests` block is a production file. A function is counted from the
line of its `fn` to the line of its closing brace (comments and blank lines included: what a
reader scrolls). Prints each function over --max-fn lines (default 120) and each production file
over --max-file lines (default 600); exits 1 when there is one.
"""
import argparse, os, re, sys

ap = argparse.ArgumentParser()
ap.add_argument("roots", nargs="+")
ap.add_argument("--max-fn", type=int, default=120)
ap.add_argument("--max-file", type=int, default=600)
ap.add_argument("-v", action="store_true", help="list the ten longest functions too")
args = ap.parse_args()

FN = re.compile(r"^\s*(?:pub(?:\([^)]*\))?\s+)?(?:const\s+)?(?:async\s+)?(?:unsafe\s+)?(?:extern\s+\"C\"\s+)?fn\s+([A-Za-z_][A-Za-z0-9_]*)")


def production(text):
    i = text.find("#[cfg(test)]\nmod tests")
    return text if i < 0 else text[:i]


def strip(line):
    # Drop a line comment and string contents, so braces in them are not counted.
    line = re.sub(r'"(?:\\.|[^"\\])*"', '""', line)
    line = re.sub(r"'(?:\\.|[^'\\])'", "''", line)
    i = line.find("//")
    return line if i < 0 else line[:i]


def functions(lines):
    """(name, first line, length) of every fn with a body."""
    out = []
    for i, line in enumerate(lines):
        m = FN.match(line)
        if not m:
            continue
        depth, opened = 0, False
        for j in range(i, len(lines)):
            s = strip(lines[j])
            if not opened and ";" in s and "{" not in s:
                # A declaration without a body (trait method).
                if depth == 0:
                    break
            for ch in s:
                if ch == "{":
                    depth += 1
                    opened = True
                elif ch == "}":
                    depth -= 1
            if opened and depth <= 0:
                out.append((m.group(1), i + 1, j - i + 1))
                break
    return out


bad = 0
longest = []
for root in args.roots:
    for d, _, fs in os.walk(root):
        rel_d = os.path.relpath(d, root)
        parts = rel_d.split(os.sep)
        if "bin" in parts or "tests" in parts:
            continue
        for f in sorted(fs):
            if not f.endswith(".rs") or f == "tests.rs":
                continue
            p = os.path.join(d, f)
            lines = production(open(p).read()).split("\n")
            n = len(lines)
            if n > args.max_file:
                print(f"{p}: file {n} lines (over {args.max_file})")
                bad += 1
            for name, first, length in functions(lines):
                longest.append((length, f"{p}:{first} {name}"))
                if length > args.max_fn:
                    print(f"{p}:{first}: fn {name} {length} lines (over {args.max_fn})")
                    bad += 1
if args.v:
    for length, where in sorted(longest, reverse=True)[:10]:
        print(f"  {length:4} {where}")
print(f"{' '.join(args.roots)}: {bad} over the limits")
sys.exit(1 if bad else 0)
