#!/usr/bin/env python3
"""Symbolises prof_shim.c's samples: prof_report.py SAMPLES ROOT_FUNCTION LIB=UNSTRIPPED...
Prints, for the samples whose stack holds ROOT_FUNCTION, the share of them in which each function
is on the stack (inclusive, inlined frames included), the share of each leaf (self), where
functions of modules not given are named by module ('[?]': a module unloaded before the samples
were written, such as the Vulkan driver), and the samples in such modules by the innermost
symbolised frames that called into them."""
import collections, os, subprocess, sys

path, root = sys.argv[1], sys.argv[2]
local = dict(a.split('=', 1) for a in sys.argv[3:])  # module basename -> unstripped local copy
maps, samples = [], []
for line in open(path):
    if line.startswith('M '):
        f = line[2:].split()
        if len(f) >= 6 and 'x' in f[1]:
            lo, hi = (int(x, 16) for x in f[0].split('-'))
            maps.append((lo, hi, int(f[2], 16), os.path.basename(f[5])))
    elif line.startswith('S'):
        samples.append([int(x, 16) for x in line.split()[1:]])

def module(a):
    for lo, hi, off, mod in maps:
        if lo <= a < hi:
            return mod
    return '?'

# Each stack starts in the signal handler and the kernel's return trampoline
# (libc's __restore_rt); the interrupted instruction comes next.
for i, s in enumerate(samples):
    k = 0
    while k < len(s) and module(s[k]) == 'prof_shim.so':
        k += 1
    samples[i] = s[k + 1:]

def where(a):
    for lo, hi, off, mod in maps:
        if lo <= a < hi:
            return mod, a - lo + off
    return '?', a

# Frames after the first are return addresses: look up the call instruction.
want = collections.defaultdict(set)
for s in samples:
    for k, a in enumerate(s):
        mod, off = where(a - (k > 0))
        if mod in local:
            want[mod].add(off)
names = {}
for mod, offs in want.items():
    offs = sorted(offs)
    out = subprocess.run(['addr2line', '-f', '-i', '-e', local[mod], '-a'] + ['%x' % o for o in offs],
                         capture_output=True, text=True).stdout.split('\n')
    cur = None
    i = 0
    while i < len(out):
        l = out[i]
        if l.startswith('0x'):
            cur = int(l, 16)
            names[(mod, cur)] = []
            i += 1
            continue
        if cur is not None and l:
            names[(mod, cur)].append(l)
            i += 2  # function name, then file:line
            continue
        i += 1

def frames(s):
    for k, a in enumerate(s):
        mod, off = where(a - (k > 0))
        if (mod, off) in names:
            for fn in names[(mod, off)]:
                yield fn
        else:
            yield '[' + mod + ']'

incl, self_, n = collections.Counter(), collections.Counter(), 0
for s in samples:
    fs = list(frames(s))
    if root not in fs:
        continue
    n += 1
    fs = fs[:fs.index(root) + 1]
    self_[fs[0]] += 1
    for f in set(fs):
        incl[f] += 1
print('%d samples, %d with %s on the stack' % (len(samples), n, root))
print('inclusive:')
for f, c in incl.most_common(45):
    print('  %5.1f%%  %s' % (100.0 * c / n, f))
print('self:')
for f, c in self_.most_common(25):
    print('  %5.1f%%  %s' % (100.0 * c / n, f))
# Samples in other modules (libc, the driver), by the innermost three
# symbolised frames that led there.
under = collections.Counter()
for s in samples:
    fs = list(frames(s))
    if root not in fs or not fs[0].startswith('['):
        continue
    named = [f for f in fs if not f.startswith('[')]
    under[(fs[0], ' <- '.join(named[:3]))] += 1
print('in other modules, by the innermost symbolised frames:')
for (leaf, chain), c in under.most_common(15):
    print('  %5.1f%%  %s %s' % (100.0 * c / n, leaf, chain))
