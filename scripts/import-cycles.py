#!/usr/bin/env python3
"""Import cycles of the library: an edge from each file of src/ (the binary and test
modules left out) to the files it names through `crate::`/`super::` paths, and through
module names imported from them (`use super::{lzss, spec}` or `use super::lzss::{self, …}`,
then `lzss::gpu::compress`).
Prints each cycle (strongly connected component of more than one file) with the folders
it spans, then the largest and how many span more than one folder. Text matching, not
name resolution: glob imports and macros are not followed, but for the codec registry's
lines.

Usage: scripts/import-cycles.py [REPO]   (default: the repository this script is in)
"""
import os, re, sys
root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), '..')
src = os.path.join(root, 'src')
files = {}
for d, _, fs in os.walk(src):
    if '/bin' in d: continue
    for f in fs:
        if f.endswith('.rs'):
            p = os.path.relpath(os.path.join(d, f), src)
            files[p] = open(os.path.join(d, f), encoding='utf-8', errors='replace').read()
def module_of(p):
    parts = p[:-3].split('/')
    if parts[-1] in ('mod', 'lib'): parts = parts[:-1]
    return parts
mod2file = {}
for p in files:
    mod2file[tuple(module_of(p))] = p
def resolve(mod, path):
    # longest prefix of path that is a module file
    for n in range(len(path), 0, -1):
        key = tuple(path[:n])
        if key in mod2file: return mod2file[key]
    return None
edges = {p: set() for p in files}
pat = re.compile(r'\b(crate|super)((?:::(?:super|[A-Za-z_][A-Za-z0-9_]*))+)')
for p, text in files.items():
    # strip comments
    text = re.sub(r'//[^\n]*', '', text)
    # tests modules: drop #[cfg(test)] mod tests { ... } roughly: skip lines after '#[cfg(test)]\nmod tests'
    i = text.find('#[cfg(test)]\nmod tests')
    if i >= 0: text = text[:i]
    me = module_of(p)
    # a file `a/b.rs` is module a::b; `super` is a
    for m in pat.finditer(text):
        base, rest = m.group(1), m.group(2).split('::')[1:]
        if base == 'crate':
            path = []
        else:
            path = me[:-1]
        while rest and rest[0] == 'super':
            path = path[:-1]; rest = rest[1:]
        full = path + rest
        t = resolve(None, full)
        if t and t != p: edges[p].add(t)
    # `use super::{a, b}` groups
    for m in re.finditer(r'use\s+(crate|super(?:::super)*)::\{([^}]*)\}', text):
        base = m.group(1)
        path = [] if base == 'crate' else me[:-base.count('super')]
        for item in re.split(r',', m.group(2)):
            item = item.strip().split('::')[0].split(' ')[0]
            if item and item != 'self':
                t = resolve(None, path + [item])
                if t and t != p: edges[p].add(t)
# The registry's lines name their codec's module (`Lzss(lzss: Lzss, LzssParams, …)`),
# which its macro reaches as `super::lzss::…`.
for p, text in files.items():
    i = text.find('registry! {')
    if i < 0: continue
    me = module_of(p)
    for m in re.finditer(r'\b[A-Z]\w*\((\w+):\s*[A-Z]', text[i:]):
        t = resolve(None, me[:-1] + [m.group(1)])
        if t and t != p: edges[p].add(t)
# Names imported as modules (`use crate::codec::lzss;`, `use super::{lzss, spec}`), then
# paths through them (`lzss::gpu::compress`).
for p, text in files.items():
    text = re.sub(r'//[^\n]*', '', text)
    i = text.find('#[cfg(test)]\nmod tests')
    if i >= 0: text = text[:i]
    me = module_of(p)
    aliases = {}
    def base_path(base):
        if base == 'crate': return []
        return me[:-1][:len(me)-1-(base.count('super')-1)] if base.startswith('super') else None
    for m in re.finditer(r'use\s+((?:crate|super)(?:::[A-Za-z_][A-Za-z0-9_]*)*)::\{([^}]*)\}', text):
        head = m.group(1).split('::')
        path = [] if head[0] == 'crate' else me[:-1]
        rest = head[1:]
        while rest and rest[0] == 'super': path = path[:-1]; rest = rest[1:]
        for item in m.group(2).split(','):
            item = item.strip()
            name = item.split(' as ')[-1].strip()
            first = item.split(' as ')[0].strip().split('::')
            if first == ['self']:
                # `use super::bwt::{self, BwtParams}`: `bwt` names the module.
                full = tuple(path + rest)
                if full in mod2file and rest: aliases[name if ' as ' in item else rest[-1]] = list(full)
            elif first and first[0]:
                full = tuple(path + rest + first)
                if full in mod2file: aliases[name if ' as ' in item else first[-1]] = list(full)
    for m in re.finditer(r'use\s+((?:crate|super)(?:::[A-Za-z_][A-Za-z0-9_]*)+)(?:\s+as\s+(\w+))?;', text):
        head = m.group(1).split('::')
        path = [] if head[0] == 'crate' else me[:-1]
        rest = head[1:]
        while rest and rest[0] == 'super': path = path[:-1]; rest = rest[1:]
        full = tuple(path + rest)
        if full in mod2file: aliases[m.group(2) or full[-1]] = list(full)
    for name, mpath in aliases.items():
        for m in re.finditer(r'(?<![:\w])' + re.escape(name) + r'((?:::[A-Za-z_][A-Za-z0-9_]*)+)', text):
            t = resolve(None, mpath + m.group(1).split('::')[1:])
            if t and t != p: edges[p].add(t)
        t = mod2file.get(tuple(mpath))
        if t and t != p: edges[p].add(t)
# Tarjan
sys.setrecursionlimit(100000)
index = {}; low = {}; st = []; on = set(); sccs = []; c = [0]
def sc(v):
    index[v] = low[v] = c[0]; c[0] += 1; st.append(v); on.add(v)
    for w in edges[v]:
        if w not in index: sc(w); low[v] = min(low[v], low[w])
        elif w in on: low[v] = min(low[v], index[w])
    if low[v] == index[v]:
        comp = []
        while True:
            w = st.pop(); on.discard(w); comp.append(w)
            if w == v: break
        sccs.append(comp)
for v in files:
    if v not in index: sc(v)
big = sorted([s for s in sccs if len(s) > 1], key=len, reverse=True)
for s in big:
    folders = sorted({os.path.dirname(f) or '.' for f in s})
    print(len(s), 'files, folders', folders)
    print('   ', sorted(s))
print('largest', len(big[0]) if big else 0, 'multi-folder', sum(1 for s in big if len({os.path.dirname(f) for f in s}) > 1))
