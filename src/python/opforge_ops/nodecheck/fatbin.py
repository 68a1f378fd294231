"""Which GPU architectures a CUDA op library carries, read from its ``.nv_fatbin`` ELF section.

The container format (all little-endian) is the one nvcc writes and src/wheel/fatbin.cpp decodes
for ``opforge inspect``; see the comment there for the byte layout. In short: the section holds
fatbinaries back to back, 8-byte aligned, each a 16-byte header (u32 magic 0xBA55ED50, u16
version, u16 header size, u64 size of the entries) followed by entries (u16 kind 1 = PTX / 2 =
ELF, u32 header size at +4, u64 payload size at +8, u32 arch at +28 such as 90 for sm_90).
"""
from __future__ import annotations

import struct
from typing import NamedTuple

FATBIN_MAGIC = 0xBA55ED50


class FatbinError(ValueError):
    """The file is not an ELF shared library with a readable fatbinary."""


# An entry's flags (u64 at +40, in headers of 48 bytes or more) mark arch-specific code (sm_90a:
# that GPU only) and family code (sm_100f), as src/wheel/fatbin.cpp reads them.
FLAG_ARCH_SPECIFIC = 0x100000
FLAG_FAMILY = 0x200000


class Image(NamedTuple):
    kind: str  # 'sm' (SASS, an ELF cubin) or 'compute' (PTX)
    arch: int  # 90 for sm_90 / compute_90
    suffix: str = ''  # 'a' (arch-specific), 'f' (family) or ''

    @property
    def name(self) -> str:
        return f'{self.kind}_{self.arch}{self.suffix}'


def elf_section(data: bytes, wanted: str) -> bytes | None:
    """The bytes of the named section of a 64-bit little-endian ELF file, or None when absent."""
    if data[:4] != b'\x7fELF':
        raise FatbinError('not an ELF file')
    if data[4] != 2 or data[5] != 1:
        raise FatbinError('not a 64-bit little-endian ELF file')
    shoff, = struct.unpack_from('<Q', data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from('<HHH', data, 0x3A)
    if shoff == 0 or shnum == 0 or shoff + shnum * shentsize > len(data):
        raise FatbinError('the ELF section headers are missing or truncated')

    def header(i: int) -> tuple[int, ...]:
        # sh_name, sh_type, sh_flags, sh_addr, sh_offset, sh_size
        return struct.unpack_from('<IIQQQQ', data, shoff + i * shentsize)

    names_off, names_size = header(shstrndx)[4], header(shstrndx)[5]
    names = data[names_off:names_off + names_size]
    for i in range(shnum):
        name_at, sh_type, _, _, offset, size = header(i)
        end = names.find(b'\0', name_at)
        if names[name_at:end].decode('ascii', 'replace') == wanted:
            if sh_type == 8:  # SHT_NOBITS: no bytes in the file
                return b''
            if offset + size > len(data):
                raise FatbinError(f'section {wanted} overruns the file')
            return data[offset:offset + size]
    return None


def parse_fatbin(section: bytes) -> list[Image]:
    """The images of a ``.nv_fatbin`` section, in file order."""
    images: list[Image] = []
    off = 0
    while off + 16 <= len(section):
        magic, = struct.unpack_from('<I', section, off)
        if magic == 0:  # alignment padding between fatbinaries
            off += 8
            continue
        if magic != FATBIN_MAGIC:
            raise FatbinError(f'fatbinary at offset {off} has magic 0x{magic:08x}, expected 0xba55ed50')
        header_size, = struct.unpack_from('<H', section, off + 6)
        entries_size, = struct.unpack_from('<Q', section, off + 8)
        entry, end = off + header_size, off + header_size + entries_size
        if header_size < 16 or end > len(section):
            raise FatbinError(f'fatbinary at offset {off} overruns its section')
        # fewer than an entry header's 32 bytes left end the fatbinary (as src/wheel/fatbin.cpp)
        while entry + 32 <= end:
            kind, = struct.unpack_from('<H', section, entry)
            ehsize, = struct.unpack_from('<I', section, entry + 4)
            payload, = struct.unpack_from('<Q', section, entry + 8)
            arch, = struct.unpack_from('<I', section, entry + 28)
            if ehsize < 32 or entry + ehsize > end:
                raise FatbinError(f'fatbinary entry at offset {entry} has a bad header size {ehsize}')
            if entry + ehsize + payload > end:
                raise FatbinError(f'fatbinary entry at offset {entry} overruns its fatbinary')
            suffix = ''
            if ehsize >= 48:
                flags, = struct.unpack_from('<Q', section, entry + 40)
                suffix = 'a' if flags & FLAG_ARCH_SPECIFIC else 'f' if flags & FLAG_FAMILY else ''
            if kind in (1, 2):
                images.append(Image('compute' if kind == 1 else 'sm', arch, suffix))
            entry += ehsize + payload
        off = end
    return images


def library_images(path: str) -> list[Image]:
    """The distinct images of the library at `path`, sorted; [] for a library without GPU code."""
    with open(path, 'rb') as f:
        data = f.read()
    section = elf_section(data, '.nv_fatbin')
    if not section:
        return []
    return sorted(set(parse_fatbin(section)), key=lambda i: (i.arch, i.kind))


def arch_list(images: list[Image]) -> list[str]:
    """Images as TORCH_CUDA_ARCH_LIST entries ('9.0', '9.0+PTX') for _native.arch_supports."""
    out = []
    for img in images:
        cc = f'{img.arch // 10}.{img.arch % 10}{img.suffix}'
        out.append(cc + '+PTX' if img.kind == 'compute' else cc)
    return out
