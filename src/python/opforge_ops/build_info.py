# Placeholder for a source checkout: `opforge build` writes the real file into the wheel
# (versions of the toolkit, compiler, arch list and ops it was built with).
BUILD_INFO = {
    'arch_list': [],
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
