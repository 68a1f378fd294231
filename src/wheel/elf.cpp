#include <algorithm>
#include <cstring>

#include "wheel/elf_image.h"
#include "wheel/wheel.h"

namespace opforge::wheel {

bool is_elf(std::string_view bytes) {
  return bytes.size() >= 4 && bytes.substr(0, 4) == std::string_view(
                                                        "\x7f"
                                                        "ELF",
                                                        4);
}

Result<std::unique_ptr<ElfImage>> ElfImage::open(std::string_view bytes) {
  if (!is_elf(bytes)) return bad_input("not an ELF file (no \\x7fELF magic)");
  if (elf_version(EV_CURRENT) == EV_NONE) return failure("libelf is out of date");
  std::unique_ptr<ElfImage> image(new ElfImage(bytes));
  image->elf_ = elf_memory(image->copy_.data(), image->copy_.size());
  if (!image->elf_ || elf_kind(image->elf_) != ELF_K_ELF)
    return bad_input(std::string("cannot read ELF: ") + elf_errmsg(-1));
  return image;
}

ElfImage::~ElfImage() {
  if (elf_) elf_end(elf_);
}

namespace {

/// DT_NEEDED and DT_SONAME of the dynamic section.
void read_dynamic(Elf* elf, Elf_Scn* scn, const GElf_Shdr& shdr, ElfInfo& info) {
  Elf_Data* data = elf_getdata(scn, nullptr);
  if (!data || shdr.sh_entsize == 0) return;
  std::size_t count = shdr.sh_size / shdr.sh_entsize;
  for (std::size_t i = 0; i < count; ++i) {
    GElf_Dyn dyn;
    if (!gelf_getdyn(data, static_cast<int>(i), &dyn)) break;
    if (dyn.d_tag == DT_NULL) break;
    if (dyn.d_tag != DT_NEEDED && dyn.d_tag != DT_SONAME) continue;
    const char* s = elf_strptr(elf, shdr.sh_link, dyn.d_un.d_val);
    if (!s) continue;
    if (dyn.d_tag == DT_NEEDED) info.needed.emplace_back(s);
    else info.soname = s;
  }
}

/// The symbol versions each needed library must provide (GLIBC_2.34, ...), and the version index
/// each one has in .gnu.version (for version_symbols).
void read_version_needs(Elf* elf, Elf_Scn* scn, const GElf_Shdr& shdr, ElfInfo& info,
                        std::map<unsigned, std::string>& by_index) {
  Elf_Data* data = elf_getdata(scn, nullptr);
  if (!data) return;
  // Offsets are the file's: a hostile one points past the section (the sums stay unsigned, and
  // an entry out of it ends the list) or chains entries in a loop (never more than it can hold).
  const std::size_t size = data->d_size;
  for (std::size_t offset = 0, seen = 0; offset < size && seen < size; ++seen) {
    GElf_Verneed need;
    if (!gelf_getverneed(data, static_cast<int>(offset), &need)) break;
    const char* file = elf_strptr(elf, shdr.sh_link, need.vn_file);
    auto& versions = info.version_needs[file ? file : "?"];
    std::size_t aux_offset = offset + need.vn_aux;
    for (int k = 0; k < need.vn_cnt && aux_offset < size; ++k) {
      GElf_Vernaux aux;
      if (!gelf_getvernaux(data, static_cast<int>(aux_offset), &aux)) break;
      const char* v = elf_strptr(elf, shdr.sh_link, aux.vna_name);
      if (v) {
        versions.emplace_back(v);
        by_index[aux.vna_other & 0x7fff] = v;
      }
      if (aux.vna_next == 0) break;
      aux_offset += aux.vna_next;
    }
    if (need.vn_next == 0) break;
    offset += need.vn_next;
  }
}

/// The version names the library defines (its own soname's entry, flagged VER_FLG_BASE, left out).
void read_version_definitions(Elf* elf, Elf_Scn* scn, const GElf_Shdr& shdr, ElfInfo& info) {
  Elf_Data* data = elf_getdata(scn, nullptr);
  if (!data) return;
  // As read_version_needs: offsets within the section, never more entries than it can hold.
  const std::size_t size = data->d_size;
  for (std::size_t offset = 0, seen = 0; offset < size && seen < size; ++seen) {
    GElf_Verdef def;
    if (!gelf_getverdef(data, static_cast<int>(offset), &def)) break;
    GElf_Verdaux aux;
    if (!(def.vd_flags & VER_FLG_BASE) && def.vd_cnt > 0 && offset + def.vd_aux < size &&
        gelf_getverdaux(data, static_cast<int>(offset + def.vd_aux), &aux))
      if (const char* v = elf_strptr(elf, shdr.sh_link, aux.vda_name)) info.defined_versions.emplace_back(v);
    if (def.vd_next == 0) break;
    offset += def.vd_next;
  }
}

/// The PyInit_* functions the library defines and exports (a CPython extension's entry point).
void read_python_init(Elf* elf, Elf_Scn* scn, const GElf_Shdr& shdr, ElfInfo& info) {
  Elf_Data* data = elf_getdata(scn, nullptr);
  if (!data || shdr.sh_entsize == 0) return;
  std::size_t count = shdr.sh_size / shdr.sh_entsize;
  for (std::size_t i = 0; i < count; ++i) {
    GElf_Sym sym;
    if (!gelf_getsym(data, static_cast<int>(i), &sym)) break;
    if (sym.st_shndx == SHN_UNDEF || GELF_ST_TYPE(sym.st_info) != STT_FUNC) continue;
    if (GELF_ST_BIND(sym.st_info) != STB_GLOBAL && GELF_ST_BIND(sym.st_info) != STB_WEAK) continue;
    const char* s = elf_strptr(elf, shdr.sh_link, sym.st_name);
    if (s && std::string_view(s).starts_with("PyInit_")) info.python_init.emplace_back(s);
  }
}

/// The undefined dynamic symbols bound to each needed version (`dlopen` → GLIBC_2.34): .dynsym
/// and .gnu.version are parallel arrays; an entry's version index names a .gnu.version_r entry.
void read_version_symbols(Elf* elf, Elf_Scn* dynsym, Elf_Scn* versym, const std::map<unsigned, std::string>& by_index,
                          ElfInfo& info) {
  GElf_Shdr sym_hdr, ver_hdr;
  if (!dynsym || !gelf_getshdr(dynsym, &sym_hdr)) return;
  Elf_Data* syms = elf_getdata(dynsym, nullptr);
  // No .gnu.version: no symbol has a version.
  Elf_Data* vers = versym && gelf_getshdr(versym, &ver_hdr) ? elf_getdata(versym, nullptr) : nullptr;
  if (!syms || sym_hdr.sh_entsize == 0) return;
  const std::size_t count = sym_hdr.sh_size / sym_hdr.sh_entsize;
  for (std::size_t i = 1; i < count; ++i) {
    GElf_Sym sym;
    GElf_Versym ver = 0;
    if (!gelf_getsym(syms, static_cast<int>(i), &sym) || (vers && !gelf_getversym(vers, static_cast<int>(i), &ver)))
      break;
    if (sym.st_shndx != SHN_UNDEF) continue;
    const char* name = elf_strptr(elf, sym_hdr.sh_link, sym.st_name);
    if (!name || !*name) continue;
    auto it = by_index.find(ver & 0x7fff);
    if (it == by_index.end()) info.unversioned_undefined.emplace_back(name);
    else info.version_symbols[it->second].emplace_back(name);
  }
  auto sort_unique = [](std::vector<std::string>& names) {
    std::sort(names.begin(), names.end());
    names.erase(std::unique(names.begin(), names.end()), names.end());
  };
  for (auto& [version, names] : info.version_symbols) sort_unique(names);
  sort_unique(info.unversioned_undefined);
}

Status read_fatbin(Elf_Scn* scn, ElfInfo& info) {
  Elf_Data* data = elf_getdata(scn, nullptr);
  if (!data || !data->d_buf) return {};
  info.fatbin = OPFORGE_TRY(parse_fatbin(std::string_view(static_cast<const char*>(data->d_buf), data->d_size)));
  return {};
}

}  // namespace

Result<ElfInfo> read_elf(std::string_view bytes) {
  auto image = OPFORGE_TRY(ElfImage::open(bytes));
  Elf* elf = image->get();
  std::size_t shstrndx = 0;
  if (elf_getshdrstrndx(elf, &shstrndx) != 0)
    return bad_input(std::string("cannot read ELF section names: ") + elf_errmsg(-1));

  ElfInfo info;
  GElf_Ehdr ehdr;
  if (!gelf_getehdr(elf, &ehdr)) return bad_input(std::string("cannot read the ELF header: ") + elf_errmsg(-1));
  info.machine = ehdr.e_machine;
  std::map<unsigned, std::string> by_index;
  Elf_Scn* dynsym = nullptr;
  Elf_Scn* versym = nullptr;
  for (Elf_Scn* scn = elf_nextscn(elf, nullptr); scn; scn = elf_nextscn(elf, scn)) {
    GElf_Shdr shdr;
    if (!gelf_getshdr(scn, &shdr)) continue;
    const char* name = elf_strptr(elf, shstrndx, shdr.sh_name);
    if (shdr.sh_type == SHT_SYMTAB) info.has_symtab = true;
    if (shdr.sh_type == SHT_DYNSYM) {
      dynsym = scn;
      read_python_init(elf, scn, shdr, info);
    } else if (shdr.sh_type == SHT_GNU_versym) {
      versym = scn;
    }
    if (shdr.sh_type == SHT_DYNAMIC) read_dynamic(elf, scn, shdr, info);
    else if (shdr.sh_type == SHT_GNU_verneed) read_version_needs(elf, scn, shdr, info, by_index);
    else if (shdr.sh_type == SHT_GNU_verdef) read_version_definitions(elf, scn, shdr, info);
    else if (name && std::string_view(name) == ".nv_fatbin" && shdr.sh_type != SHT_NOBITS)
      OPFORGE_CHECK(read_fatbin(scn, info));
  }
  read_version_symbols(elf, dynsym, versym, by_index, info);
  return info;
}

}  // namespace opforge::wheel
