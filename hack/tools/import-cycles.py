#!/usr/bin/env python3
"""Import circles in a crate, between its files and between its folders (`make lint`; docs/design.md §3g).

Reads every production `.rs` file under the given `src/` folder (test modules, `tests.rs` files and `tests/` folders,
modules declared under `#[cfg(test)]`, `src/bin` and comments left out), takes each path it names
through `crate::`, `super::`, `self::` or a child module, grouped `use` imports included
(`use crate::{a, b::{c, d}}`), and resolves it to the longest module file it reaches.

Files: an edge a -> b when file a names file b. Folders (the crate's top-level modules, a folder
or a lone file such as `run.rs`): an edge a -> b when any file under a names any file under b.
Prints each circle of both graphs and both counts; exits 1 when there is any. `-v` also prints
the graphs.
"""
import os
import re
import sys

root = sys.argv[1]
verbose = '-v' in sys.argv[2:]


def module_of(rel):
    mod = rel[:-3].replace(os.sep, '::')
    if mod.endswith('::mod'):
        mod = mod[:-5]
    if mod in ('lib', 'main'):
        mod = ''
    return mod


def uncomment(s):
    s = re.sub(r'/\*.*?\*/', '', s, flags=re.S)
    return '\n'.join(x for x in s.split('\n') if not x.strip().startswith('//'))


def prod(s):
    m = re.search(r'#\[cfg\(test\)\]\s*(?:pub(?:\([a-z]+\))?\s+)?mod\s+tests\s*\{', s)
    return s if m is None else s[:m.start()]


files = {}
for d, _, fs in os.walk(root):
    for f in fs:
        parts = os.path.relpath(d, root).split(os.sep)
        if f.endswith('.rs') and f != 'tests.rs' and 'bin' not in parts and 'tests' not in parts:
            p = os.path.join(d, f)
            with open(p) as fh:
                files[module_of(os.path.relpath(p, root))] = uncomment(prod(fh.read()))

# Modules declared only for tests (`#[cfg(test)] mod fixtures;`) are not production code.
test_only = set()
for mod, s in files.items():
    for m in re.finditer(r'#\[cfg\(test\)\]\s*(?:pub(?:\([a-z]+\))?\s+)?mod\s+([a-z_][a-z0-9_]*)\s*;', s):
        test_only.add((mod + '::' if mod else '') + m.group(1))
for t in list(test_only):
    for mod in list(files):
        if mod == t or mod.startswith(t + '::'):
            del files[mod]


def expand(tree):
    """`a::{b, c::{d, e}, self}` -> ['a::b', 'a::c::d', 'a::c::e', 'a'] (aliases already cut)."""
    tree = re.sub(r'\s+', '', tree)
    i = tree.find('{')
    if i < 0:
        return [tree]
    prefix, body = tree[:i], tree[i + 1:tree.rindex('}')]
    parts, depth, cur = [], 0, ''
    for ch in body:
        if ch == ',' and depth == 0:
            parts.append(cur)
            cur = ''
            continue
        depth += ch == '{'
        depth -= ch == '}'
        cur += ch
    parts.append(cur)
    out = []
    for part in parts:
        if not part:
            continue
        if part == 'self':
            out.append(prefix.rstrip(':'))
        else:
            out.extend(prefix + x for x in expand(part))
    return out


def resolve(cur, path):
    parts = [p for p in path.split('::') if p]
    if not parts:
        return None
    if parts[0] == 'crate':
        base, parts = [], parts[1:]
    elif parts[0] == 'super':
        base = cur.split('::')[:-1] if cur else []
        parts = parts[1:]
        while parts and parts[0] == 'super':
            base, parts = base[:-1], parts[1:]
    elif parts[0] == 'self':
        base, parts = (cur.split('::') if cur else []), parts[1:]
    else:
        # A child module of the current one, named bare.
        child = (cur + '::' if cur else '') + parts[0]
        if child not in files:
            return None
        base = cur.split('::') if cur else []
    for k in range(len(parts), -1, -1):
        m = '::'.join(x for x in base + parts[:k] if x)
        if m in files:
            return m
    return None


def uses(s):
    """Every path a `use` item names, groups expanded, aliases dropped."""
    out = []
    for m in re.finditer(r'\buse\s+([^;]+);', s):
        tree = re.sub(r'\s+as\s+[A-Za-z_][A-Za-z0-9_]*', '', m.group(1))
        out.extend(expand(tree))
    return out


edges = {}
for mod, s in files.items():
    deps = set()
    for path in uses(s):
        t = resolve(mod, path)
        if t is not None:
            deps.add(t)
    for m in re.finditer(r'\b((?:crate|super|self)(?:::[A-Za-z_][A-Za-z0-9_]*)+)', s):
        t = resolve(mod, m.group(1))
        if t is not None:
            deps.add(t)
    for m in re.finditer(r'\b([a-z_][a-z0-9_]*)::[A-Za-z_{]', s):
        c = (mod + '::' if mod else '') + m.group(1)
        if c in files:
            deps.add(c)
    deps.discard(mod)
    deps.discard('')
    edges[mod] = deps

# Folders: the crate's top-level modules (lib.rs itself is none).
folders = {}
for mod, deps in edges.items():
    if not mod:
        continue
    a = mod.split('::')[0]
    folders.setdefault(a, set())
    for d in deps:
        b = d.split('::')[0]
        if b != a:
            folders[a].add(b)


def circles(graph):
    sys.setrecursionlimit(10000)
    color, stack, found = {}, [], []

    def dfs(u):
        color[u] = 1
        stack.append(u)
        for v in sorted(graph.get(u, ())):
            if color.get(v, 0) == 0:
                dfs(v)
            elif color.get(v) == 1:
                found.append(stack[stack.index(v):] + [v])
        stack.pop()
        color[u] = 2

    for u in sorted(graph):
        if color.get(u, 0) == 0:
            dfs(u)
    return found


file_circles = circles(edges)
folder_circles = circles(folders)
print(root, "modules:", len(files), "file circles:", len(file_circles),
      "folders:", len(folders), "folder circles:", len(folder_circles))
for c in file_circles:
    print("  file:   " + " -> ".join(x or '(lib)' for x in c))
for c in folder_circles:
    print("  folder: " + " -> ".join(c))
    # Which files make each edge of the circle, so it can be cut.
    for a, b in zip(c, c[1:]):
        why = sorted(f"{m} -> {d}" for m, ds in edges.items() if m.split('::')[0] == a
                     for d in ds if d.split('::')[0] == b)
        print(f"          {a} -> {b}: " + "; ".join(why))
if verbose:
    print("files:")
    for k in sorted(edges):
        print(f"  {k or '(lib)'} -> {', '.join(sorted(edges[k]))}")
    print("folders:")
    for k in sorted(folders):
        print(f"  {k} -> {', '.join(sorted(folders[k]))}")
if file_circles or folder_circles:
    sys.exit(1)
