"""variantlib (the draft's reference implementation, pinned in scripts/deps) reads what opforge
wrote into DIST: every variant wheel's variant.json validates under the label its file name
carries, that label is variantlib's own hash of the properties, and variantlib's
generate-index-json over the wheels writes byte for byte the {name}-{version}-variants.json
opforge wrote. Then its resolver picks by abi_dependency as the docs say."""

import json
import os
import pathlib
import shutil
import sys
import tempfile
import zipfile

from variantlib.api import get_variants_by_priority
from variantlib.commands.generate_index_json import generate_index_json
from variantlib.constants import VALIDATION_WHEEL_NAME_REGEX
from variantlib.models.variant import VariantDescription
from variantlib.variant_dist_info import VariantDistInfo
from variantlib.variants_json import VariantsJson

dist = pathlib.Path(sys.argv[1])
wheels = sorted(p for p in dist.glob("*.whl"))
variant_wheels = []
for wheel in wheels:
    m = VALIDATION_WHEEL_NAME_REGEX.fullmatch(wheel.name)
    assert m, wheel.name
    label = m.group("variant_label")
    if label is None:
        continue
    with zipfile.ZipFile(wheel) as z:
        (name,) = [n for n in z.namelist() if n.endswith(".dist-info/variant.json")]
        info = VariantDistInfo(z.read(name), label)
    assert VariantDescription(info.variant_desc.properties).label == label, wheel.name
    variant_wheels.append(wheel)
assert variant_wheels, "no variant wheel in " + str(dist)

with tempfile.TemporaryDirectory() as tmp:
    for wheel in wheels:
        shutil.copy(wheel, tmp)
    generate_index_json(["-d", tmp])
    produced = sorted(pathlib.Path(tmp).glob("*-variants.json"))
    assert produced, "variantlib wrote no variants.json"
    for theirs in produced:
        ours = dist / theirs.name
        assert ours.read_bytes() == theirs.read_bytes(), f"{theirs.name} differs:\n{ours.read_text()}\n--- variantlib:\n{theirs.read_text()}"
        index = VariantsJson(json.loads(ours.read_text()))
        # Only abi_dependency variants resolve here: nvidia's plugin is not installed.
        abi_only = {
            label: desc.to_dict()
            for label, desc in index.variants.items()
            if all(p.namespace == "abi_dependency" for p in desc.properties)
        }
        if not abi_only:
            continue
        doc = json.loads(ours.read_text())
        doc["variants"] = abi_only
        os.environ.pop("VARIANT_ABI_DEPENDENCY", None)
        without = [v.label for v in get_variants_by_priority(variants_json=doc)]
        os.environ["VARIANT_ABI_DEPENDENCY"] = "torch==2.15.1"
        with_torch = [v.label for v in get_variants_by_priority(variants_json=doc)]
        assert not set(without) & set(abi_only), without
        assert set(with_torch) & set(abi_only), with_torch
print(f"variantlib: {len(variant_wheels)} variant wheel(s) and {len(produced)} variants.json agree")
