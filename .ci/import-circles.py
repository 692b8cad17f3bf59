#!/usr/bin/env python3
"""Fails when source files import each other in a circle.

Each file of src/ is a node (`a/mod.rs` is module `a`; lib.rs is the crate root,
shown as `lib.rs`; src/bin/ holds the command, a crate of its own, and is left out);
`crate::x::y` and `super::y` paths outside comments and `#[cfg(test)] mod tests` name an
edge to the longest module prefix that is a file, and a `crate::Item` that names no
module an edge to the root, which re-exports it. The root's own edges are the modules
its code names (`pipeline::dump_input`, `pub use error::…`). A circle of two or more
files (a strongly connected component) is printed with its edges, and the exit status
is 1: so the crate root imports no module that imports it. Run by .ci/run:

    python3 .ci/import-circles.py src
"""
import os, re, sys
root=sys.argv[1] if len(sys.argv)>1 else 'src'
files={}
for d,ds,fs in os.walk(root):
    if os.path.relpath(d,root)=='.' and 'bin' in ds: ds.remove('bin')
    for f in fs:
        if f.endswith('.rs'):
            p=os.path.join(d,f)
            rel=os.path.relpath(p,root)[:-3]
            parts=rel.split('/')
            if parts[-1] in ('mod','lib','main'): parts=parts[:-1]
            files['::'.join(parts)]=p
mods=set(files)
def resolve(path):
    # longest prefix that is a module
    parts=path.split('::')
    for i in range(len(parts),0,-1):
        m='::'.join(parts[:i])
        if m in mods: return m
    return None
edges={m:set() for m in mods}
for m,p in files.items():
    src=open(p).read()
    src=re.sub(r'#\[cfg\(test\)\]\s*mod tests\s*\{.*','',src,flags=re.S)
    src=re.sub(r"//[^\n]*","",src)
    for mm in re.finditer(r'crate::([A-Za-z_][A-Za-z0-9_]*(?:::[A-Za-z_][A-Za-z0-9_]*)*)',src):
        t=resolve(mm.group(1))
        if t and t!=m and not m.startswith(t+'::') and t!='':
            edges[m].add(t)
        elif t is None and m!='':
            # An item of the crate root (defined or re-exported there).
            edges[m].add('')
    if m=='':
        # The root names its modules without `crate::`: `pipeline::dump_input`,
        # `pub use error::{…}`; declaring one (`mod x;`) is no use of it.
        body=re.sub(r'(?m)^\s*(pub(\([a-z]+\))?\s+)?mod\s+\w+\s*;','',src)
        for top in sorted(x for x in mods if x and '::' not in x):
            if re.search(r'\b'+top+r'::',body):
                edges[m].add(top)
    # use crate::{a, b::c}
    for mm in re.finditer(r'use crate::\{([^;]*)\};',src,flags=re.S):
        for item in re.split(r',',mm.group(1)):
            item=item.strip().split(' ')[0]
            item=re.sub(r'::\{.*','',item)
            if not item: continue
            t=resolve(item)
            if t and t!=m and not m.startswith(t+'::'):
                edges[m].add(t)
    # super:: relative
    base=m.split('::')
    is_mod=p.endswith('mod.rs')
    parent=base if is_mod else base[:-1]
    for mm in re.finditer(r'\bsuper::([A-Za-z_][A-Za-z0-9_]*(?:::[A-Za-z_][A-Za-z0-9_]*)*)',src):
        par=parent[:-1] if is_mod else parent
        full='::'.join(par+[mm.group(1)]) if par else mm.group(1)
        t=resolve(full)
        if t and t!=m and not m.startswith(t+'::'):
            edges[m].add(t)
    for mm in re.finditer(r'use super::\{([^;]*)\};',src,flags=re.S):
        par=parent[:-1] if is_mod else parent
        for item in mm.group(1).split(','):
            item=item.strip().split(' ')[0]; item=re.sub(r'::\{.*','',item)
            if not item or item=='self': continue
            full='::'.join(par+[item]) if par else item
            t=resolve(full)
            if t and t!=m and not m.startswith(t+'::'):
                edges[m].add(t)
# parents use children (mod x;) are fine; a child using its parent module's items is an edge child->parent; parent->child edges come from `crate::parent::child` uses in parent.
# find cycles: SCCs
idx={};low={};st=[];on=set();sccs=[];c=[0]
sys.setrecursionlimit(10000)
def sc(v):
    idx[v]=low[v]=c[0];c[0]+=1;st.append(v);on.add(v)
    for w in edges[v]:
        if w not in idx: sc(w);low[v]=min(low[v],low[w])
        elif w in on: low[v]=min(low[v],idx[w])
    if low[v]==idx[v]:
        comp=[]
        while True:
            w=st.pop();on.discard(w);comp.append(w)
            if w==v:break
        if len(comp)>1: sccs.append(sorted(comp))
for v in sorted(mods):
    if v not in idx: sc(v)
name=lambda x: x or 'lib.rs'
for comp in sccs:
    print('circle:', ' <-> '.join(map(name,comp)))
    for a in comp:
        for b in sorted(edges[a]):
            if b in comp: print('   ',name(a),'->',name(b))
sys.exit(1 if sccs else 0)
