"""variantlib 0.2.2's resolver against `opforge pick --json`: for each node of the pick, the
variants.json of DIST with its providers replaced by the node's supported properties (the pick's
"properties": static providers, so no plugin runs), resolved by get_variants_by_priority, after
the wheels an installer would drop for their platform tag (another machine) are dropped, as a
tag-aware installer does before it looks at variants.

Usage: pick_variants.py DIST PICK.json NODE=MACHINE...
Prints {node: {"pick": [wheels, best first], "variantlib": [wheels, best first], "by_version":
{name-version: [variantlib's wheels of that version, best first]}}}."""

import json
import os
import pathlib
import sys

from variantlib.api import get_variants_by_priority
from variantlib.constants import NULL_VARIANT_LABEL, VALIDATION_WHEEL_NAME_REGEX

dist = pathlib.Path(sys.argv[1])
pick = json.loads(pathlib.Path(sys.argv[2]).read_text())
machines = dict(arg.split("=", 1) for arg in sys.argv[3:])
# The node's torch comes from its properties, not from what this Python has installed.
os.environ.pop("VARIANT_ABI_DEPENDENCY", None)


def wheel_machine(platform: str) -> str:
    """manylinux_2_34_x86_64, manylinux2014_aarch64, linux_x86_64 -> the machine."""
    if platform.startswith("manylinux_"):
        return platform.split("_", 3)[3]
    return platform.split("_", 1)[1]


wheels = {}  # (name-version) -> {label: file name}, the plain wheel under NULL_VARIANT_LABEL
for path in sorted(dist.glob("*.whl")):
    m = VALIDATION_WHEEL_NAME_REGEX.fullmatch(path.name)
    assert m, path.name
    wheels.setdefault((m.group("namever"), m.group("plat")), {})[m.group("variant_label") or NULL_VARIANT_LABEL] = path.name

out = {}
for entry in pick["nodes"]:
    providers = entry["properties"]
    for node in entry["nodes"]:
        machine = machines[node]
        chosen, by_version = [], {}
        for (namever, plat), labels in sorted(wheels.items()):
            if wheel_machine(plat) != machine:
                continue
            variants_file = dist / f"{namever}-variants.json"
            if not variants_file.exists():  # plain wheels only: the null variant
                chosen += [labels[NULL_VARIANT_LABEL]] if NULL_VARIANT_LABEL in labels else []
                by_version.setdefault(namever, []).extend(chosen[-1:] if NULL_VARIANT_LABEL in labels else [])
                continue
            doc = json.loads(variants_file.read_text())
            doc["default-priorities"] = providers["default-priorities"]
            doc["providers"] = providers["providers"]
            # A variant naming a namespace the node supports nothing of cannot be chosen; the
            # schema wants a provider for each namespace a variant names, so it goes first.
            doc["variants"] = {
                label: props
                for label, props in doc["variants"].items()
                if label in labels and set(props) <= set(providers["providers"])
            }
            for vdesc in get_variants_by_priority(variants_json=doc):
                if vdesc.label in labels:
                    chosen.append(labels[vdesc.label])
                    by_version.setdefault(namever, []).append(labels[vdesc.label])
        mine = entry["projects"][0]["order"] if entry["projects"] else []
        out[node] = {"pick": mine, "variantlib": chosen, "by_version": by_version}
print(json.dumps(out, indent=2))
