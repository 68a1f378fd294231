"""How this installation was built. In a wheel, `opforge build` writes this file (versions of the
toolkit, compiler, arch list and ops it was built with); in a source checkout it is this
placeholder. Keys: see docs/ops.md."""
from typing import Any, Dict

BUILD_INFO: Dict[str, Any] = {
    'arch_list': [],
    'build_vars': {},
    'host_compiler': '',
    'notes': {},
    'op_kinds': {},
    'ops': [],
    'opforge_version': '',
    'source_checkout': True,
    'source_commit': '',
    'toolkit_version': '',
    'version': '0+source',
}
