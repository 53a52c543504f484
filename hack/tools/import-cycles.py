#!/usr/bin/env python3
"""Import circles between the files of a crate (`make lint`; docs/design.md §3g).

Reads every production `.rs` file under the given `src/` folder (test modules, `tests.rs` files,
`src/bin` and comments left out), takes each path it names through `crate::`, `super::`, `self::`
or a child module, and resolves it to the longest module file it reaches. Prints each cycle and
exits 1 when there is one; `-v` also prints the graph.
"""
import re,os,sys
root=sys.argv[1]
files={}
for d,_,fs in os.walk(root):
    for f in fs:
        if f.endswith('.rs') and f!='tests.rs' and 'bin' not in d:
            p=os.path.join(d,f); rel=os.path.relpath(p,root)
            mod=rel[:-3].replace('/','::')
            if mod.endswith('::mod'): mod=mod[:-5]
            if mod in ('lib','main'): mod=''
            files[mod]=open(p).read()
def prod(s):
    i=s.find('#[cfg(test)]\nmod tests')
    return s if i<0 else s[:i]
def resolve(cur, path):
    parts=path.split('::')
    if parts[0]=='crate': base=[]; parts=parts[1:]
    elif parts[0]=='super':
        base=cur.split('::')[:-1] if cur else []
        parts=parts[1:]
        while parts and parts[0]=='super': base=base[:-1]; parts=parts[1:]
    elif parts[0]=='self': base=cur.split('::') if cur else []; parts=parts[1:]
    else: return None
    # longest prefix that is a module file
    best=None
    for k in range(len(parts),-1,-1):
        m='::'.join([x for x in base+parts[:k] if x])
        if m in files: best=m; break
    return best
edges={}
for mod,s in files.items():
    s=prod(s); s='\n'.join(x for x in s.split('\n') if not x.strip().startswith('//'))
    deps=set()
    for m in re.finditer(r'\b((?:crate|super|self)(?:::[A-Za-z_][A-Za-z0-9_]*)+)', s):
        t=resolve(mod,m.group(1))
        if t is not None and t!=mod and t!='': deps.add(t)
    # local `use x::` where x is a child module declared with mod
    for m in re.finditer(r'^use ([a-z_][a-z0-9_]*)::', s, re.M):
        c=(mod+'::' if mod else '')+m.group(1)
        if c in files: deps.add(c)
    for m in re.finditer(r'\b([a-z_][a-z0-9_]*)::[A-Za-z_]', s):
        c=(mod+'::' if mod else '')+m.group(1)
        if c in files and c!=mod: deps.add(c)
    edges[mod]=deps
# find cycles
sys.setrecursionlimit(10000)
color={};stack=[];cycles=[]
def dfs(u):
    color[u]=1;stack.append(u)
    for v in edges.get(u,()):
        if color.get(v,0)==0: dfs(v)
        elif color.get(v)==1: cycles.append(stack[stack.index(v):]+[v])
    stack.pop();color[u]=2
for u in edges:
    if color.get(u,0)==0: dfs(u)
print(root, "modules:",len(files),"cycles:",len(cycles))
for c in cycles: print("  "+" -> ".join(c))
if cycles: sys.exit(1)
if '-v' in sys.argv[2:]:
    for k in sorted(edges): print(f"  {k or '(lib)'} -> {', '.join(sorted(edges[k]))}")
