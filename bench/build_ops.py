#!/usr/bin/python3
"""Development build of the CPU op libraries, by hand from their op.toml (what the native backend
of `opforge build` does, minus the wheel):
`bench/build_ops.py [--machine aarch64 --cxx aarch64-linux-gnu-g++] OUT_DIR [op ...]`.

Used while developing, by the benchmarks and by the aarch64 test (tests/kernels_aarch64.sh); the
flags mirror the backend's common ones (-O2 -fPIC -fvisibility=hidden) plus each manifest's own:
the common sources and flags, then those of [machine.<machine>] (default: this machine's)."""
import argparse
import os
import platform
import subprocess
import tomllib

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
COMMON = ['-std=c++17', '-O2', '-fPIC', '-fvisibility=hidden', '-Wall', '-Wextra']


def build(op, out, machine, cxx):
    d = os.path.join(ROOT, 'src', 'kernels', op)
    with open(os.path.join(d, 'op.toml'), 'rb') as f:
        m = tomllib.load(f)
    own = m.get('machine', {}).get(machine, {})
    objs = []
    inc = [f'-I{os.path.join(d, i)}' for i in m.get('include_dirs', [])]
    for src in m['sources'] + own.get('sources', []):
        obj = os.path.join(out, f'{op}.{src}.o')
        flags = (COMMON + m.get('cxx_flags', []) + m.get('source_flags', {}).get(src, []) +
                 own.get('source_flags', {}).get(src, []))
        subprocess.run([cxx, *flags, *inc, '-c', os.path.join(d, src), '-o', obj], check=True)
        objs.append(obj)
    lib = os.path.join(out, f'libopforge_{op}.so')
    libs = [f'-l{x}' for x in m.get('libraries', [])]
    subprocess.run([cxx, '-shared', '-Wl,--as-needed', '-o', lib, *objs, *m.get('ldflags', []), *libs],
                   check=True)
    return lib


def main():
    ap = argparse.ArgumentParser(description='Build the CPU op libraries from their op.toml.')
    ap.add_argument('--machine', default=platform.machine(), help="op.toml's [machine.<name>] to add")
    ap.add_argument('--cxx', default='g++', help='the C++ compiler (a cross compiler for another machine)')
    ap.add_argument('out', nargs='?', default=os.path.join(ROOT, 'build', 'ops-dev'))
    ap.add_argument('ops', nargs='*', default=['aio', 'cpu_adam', 'utils'])
    args = ap.parse_args()
    out = os.path.abspath(args.out)
    os.makedirs(out, exist_ok=True)
    for op in args.ops:
        print(build(op, out, args.machine, args.cxx))


if __name__ == '__main__':
    main()
