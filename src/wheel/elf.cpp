#include <gelf.h>
#include <libelf.h>

#include <cstring>

#include "wheel/wheel.h"

namespace opforge::wheel {

bool is_elf(std::string_view bytes) {
  return bytes.size() >= 4 && bytes.substr(0, 4) == std::string_view("\x7f" "ELF", 4);
}

namespace {

struct ElfHandle {
  Elf* elf = nullptr;
  ~ElfHandle() {
    if (elf) elf_end(elf);
  }
};

}  // namespace

Result<ElfInfo> read_elf(std::string_view bytes) {
  if (!is_elf(bytes)) return bad_input("not an ELF file (no \\x7fELF magic)");
  if (elf_version(EV_CURRENT) == EV_NONE) return failure("libelf is out of date");
  // elf_memory wants a mutable buffer; it only reads from it with ELF_C_READ_MMAP semantics.
  std::string copy(bytes);
  ElfHandle h;
  h.elf = elf_memory(copy.data(), copy.size());
  if (!h.elf || elf_kind(h.elf) != ELF_K_ELF)
    return bad_input(std::string("cannot read ELF: ") + elf_errmsg(-1));

  std::size_t shstrndx = 0;
  if (elf_getshdrstrndx(h.elf, &shstrndx) != 0)
    return bad_input(std::string("cannot read ELF section names: ") + elf_errmsg(-1));

  ElfInfo info;
  for (Elf_Scn* scn = elf_nextscn(h.elf, nullptr); scn; scn = elf_nextscn(h.elf, scn)) {
    GElf_Shdr shdr;
    if (!gelf_getshdr(scn, &shdr)) continue;
    const char* name = elf_strptr(h.elf, shstrndx, shdr.sh_name);
    std::string_view sname = name ? name : "";
    if (shdr.sh_type == SHT_SYMTAB) info.has_symtab = true;

    if (shdr.sh_type == SHT_DYNAMIC) {
      Elf_Data* data = elf_getdata(scn, nullptr);
      if (!data || shdr.sh_entsize == 0) continue;
      std::size_t count = shdr.sh_size / shdr.sh_entsize;
      for (std::size_t i = 0; i < count; ++i) {
        GElf_Dyn dyn;
        if (!gelf_getdyn(data, static_cast<int>(i), &dyn)) break;
        if (dyn.d_tag == DT_NULL) break;
        if (dyn.d_tag == DT_NEEDED || dyn.d_tag == DT_SONAME) {
          const char* s = elf_strptr(h.elf, shdr.sh_link, dyn.d_un.d_val);
          if (!s) continue;
          if (dyn.d_tag == DT_NEEDED)
            info.needed.emplace_back(s);
          else
            info.soname = s;
        }
      }
    } else if (shdr.sh_type == SHT_GNU_verneed) {
      Elf_Data* data = elf_getdata(scn, nullptr);
      if (!data) continue;
      int offset = 0;
      for (;;) {
        GElf_Verneed need;
        if (!gelf_getverneed(data, offset, &need)) break;
        const char* file = elf_strptr(h.elf, shdr.sh_link, need.vn_file);
        auto& versions = info.version_needs[file ? file : "?"];
        int aux_offset = offset + static_cast<int>(need.vn_aux);
        for (int k = 0; k < need.vn_cnt; ++k) {
          GElf_Vernaux aux;
          if (!gelf_getvernaux(data, aux_offset, &aux)) break;
          const char* v = elf_strptr(h.elf, shdr.sh_link, aux.vna_name);
          if (v) versions.emplace_back(v);
          if (aux.vna_next == 0) break;
          aux_offset += static_cast<int>(aux.vna_next);
        }
        if (need.vn_next == 0) break;
        offset += static_cast<int>(need.vn_next);
      }
    } else if (sname == ".nv_fatbin" && shdr.sh_type != SHT_NOBITS) {
      Elf_Data* data = elf_getdata(scn, nullptr);
      if (!data || !data->d_buf) continue;
      auto images = parse_fatbin(
          std::string_view(static_cast<const char*>(data->d_buf), data->d_size));
      if (!images) return std::unexpected(images.error());
      info.fatbin = std::move(*images);
    }
  }
  return info;
}

}  // namespace opforge::wheel
