#!/usr/bin/python3
"""Development build of the CPU op libraries, by hand from their op.toml (what the native backend
of `opforge build` does, minus the wheel): `bench/build_ops.py OUT_DIR [op ...]`.

Used while developing and by the benchmarks; the flags mirror the backend's common ones
(-O2 -fPIC -fvisibility=hidden) plus each manifest's own."""
import os
import subprocess
import sys
import tomllib

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
COMMON = ['-std=c++20', '-O2', '-fPIC', '-fvisibility=hidden', '-Wall', '-Wextra']


def build(op, out):
    d = os.path.join(ROOT, 'src', 'kernels', op)
    with open(os.path.join(d, 'op.toml'), 'rb') as f:
        m = tomllib.load(f)
    objs = []
    inc = [f'-I{os.path.join(d, i)}' for i in m.get('include_dirs', [])]
    for src in m['sources']:
        obj = os.path.join(out, f'{op}.{src}.o')
        flags = COMMON + m.get('cxx_flags', []) + m.get('source_flags', {}).get(src, [])
        subprocess.run(['g++', *flags, *inc, '-c', os.path.join(d, src), '-o', obj], check=True)
        objs.append(obj)
    lib = os.path.join(out, f'libopforge_{op}.so')
    libs = [f'-l{x}' for x in m.get('libraries', [])]
    subprocess.run(['g++', '-shared', '-Wl,--as-needed', '-o', lib, *objs, *m.get('ldflags', []), *libs],
                   check=True)
    return lib


def main():
    out = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, 'build', 'ops-dev'))
    os.makedirs(out, exist_ok=True)
    for op in sys.argv[2:] or ['aio', 'cpu_adam', 'utils']:
        print(build(op, out))


if __name__ == '__main__':
    main()
