#!/usr/bin/env bash
# glibc_floor.sh OPFORGE DIST_DIR TOOLS_VENV: every ELF file in the platform wheel needs no
# GLIBC_ symbol version above 2.28 and no GLIBCXX_/CXXABI_ at all (libstdc++ does not travel with
# it), read with opforge's own ELF reader (`opforge inspect --json`); the tag in its name, the one
# opforge computes and the one `auditwheel show` finds are the same.
set -euo pipefail
opforge="$1" wheel=$(ls "$2"/opforge-*.whl) tools="$3"
"$opforge" inspect --json "$wheel" > "$2/inspect.json"
auditwheel="$tools/bin/auditwheel"
[ -x "$auditwheel" ] || { echo "auditwheel missing: run scripts/deps"; exit 1; }
"$auditwheel" show "$wheel" > "$2/auditwheel.txt" 2>&1 || { cat "$2/auditwheel.txt"; exit 1; }
cat "$2/auditwheel.txt"
python3 - "$wheel" "$2/inspect.json" "$2/auditwheel.txt" <<'PY'
import json, re, sys
wheel, inspect, audit = sys.argv[1], json.load(open(sys.argv[2])), open(sys.argv[3]).read()
tag = wheel.rsplit("-", 1)[1][: -len(".whl")]
elfs = [f for f in inspect["files"] if "elf" in f]
assert elfs, "no ELF file in the wheel"
worst = (0, 0)
for f in elfs:
    for lib, versions in f["elf"]["version_needs"].items():
        for v in versions:
            assert not v.startswith(("GLIBCXX_", "CXXABI_")), f"{f['path']} needs {v} from {lib}: libstdc++ is not in the wheel"
            if v.startswith("GLIBC_2."):
                ver = tuple(int(x) for x in v[len("GLIBC_"):].split(".")[:2])
                assert ver <= (2, 28), f"{f['path']} needs {v} from {lib}: above the glibc 2.28 floor"
                worst = max(worst, ver)
    print(f"{f['path']}: needs {f['elf']['needed']}, highest GLIBC_{worst[0]}.{worst[1]}")
assert inspect["valid"], inspect["problems"]
assert inspect["computed_platform"] == tag, (inspect["computed_platform"], tag)
m = re.search(r'consistent with the following platform tag:\s*"([^"]+)"', audit)
assert m, "auditwheel show names no platform tag"
assert m.group(1) == tag, f"auditwheel: {m.group(1)}, the wheel's name: {tag}"
print(f"tag {tag}: opforge inspect, auditwheel show and the file name agree; highest GLIBC_{worst[0]}.{worst[1]}")
PY
