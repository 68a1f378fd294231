"""Loads every op library and imports every stable-ABI extension of the installed opforge_ops
wheel (tests/install/root_build.sh runs it in a Debian 11 root and on the host): a file that needs a
newer glibc than the machine's fails here with "version `GLIBC_2.3x' not found"."""

import ctypes
import glob
import importlib.util
import os
import platform

import opforge_ops

lib = os.path.join(os.path.dirname(opforge_ops.__file__), "_lib")
libs = sorted(glob.glob(os.path.join(lib, "libopforge_*.so")))
exts = sorted(glob.glob(os.path.join(lib, "*.abi3.so")))
assert libs, "no op library in " + lib
assert exts, "no stable-ABI extension in " + lib
for path in libs:
    ctypes.CDLL(path)
    print("loaded", os.path.basename(path))
for path in exts:
    name = os.path.basename(path).split(".")[0]
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec and spec.loader
    spec.loader.exec_module(importlib.util.module_from_spec(spec))
    print("imported", os.path.basename(path))
print("glibc", platform.libc_ver()[1], "ops", opforge_ops.available_ops())
