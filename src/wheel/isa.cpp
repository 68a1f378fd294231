// Instruction-set use of ELF code. Which extension an x86-64 instruction belongs to comes from
// Zydis (its ISA sets are Intel XED's); an AArch64 one's from its encoding (wheel/isa_aarch64.h).
// The families and levels are the machine's CpuMachine table's (target/x86.cpp, target/arm.cpp).
#include "wheel/isa.h"

#include <Zydis/Zydis.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdio>
#include <map>
#include <tuple>

#include "target/platform.h"
#include "target/x86.h"
#include "util/strings.h"
#include "wheel/elf_image.h"
#include "wheel/isa_aarch64.h"

namespace opforge::wheel {
namespace {

// Instruction sets every x86-64 CPU runs (the psABI baseline: x87, MMX, SSE, SSE2, CMOV, FXSR,
// long mode) and hint instructions that are NOPs where the feature is missing (endbr64: CET).
bool baseline_set(ZydisISASet set) {
  switch (set) {
    case ZYDIS_ISA_SET_I86:
    case ZYDIS_ISA_SET_I186:
    case ZYDIS_ISA_SET_I286PROTECTED:
    case ZYDIS_ISA_SET_I286REAL:
    case ZYDIS_ISA_SET_I386:
    case ZYDIS_ISA_SET_I486:
    case ZYDIS_ISA_SET_I486REAL:
    case ZYDIS_ISA_SET_PENTIUMREAL:
    case ZYDIS_ISA_SET_PENTIUMMMX:
    case ZYDIS_ISA_SET_PPRO:
    case ZYDIS_ISA_SET_CMOV:
    case ZYDIS_ISA_SET_FCMOV:
    case ZYDIS_ISA_SET_X87:
    case ZYDIS_ISA_SET_SSE:
    case ZYDIS_ISA_SET_SSE2:
    case ZYDIS_ISA_SET_SSE2MMX:
    case ZYDIS_ISA_SET_SSEMXCSR:
    case ZYDIS_ISA_SET_SSE_PREFETCH:
    case ZYDIS_ISA_SET_FXSAVE:
    case ZYDIS_ISA_SET_FXSAVE64:
    case ZYDIS_ISA_SET_LONGMODE:
    case ZYDIS_ISA_SET_PAUSE:
    case ZYDIS_ISA_SET_FAT_NOP:
    case ZYDIS_ISA_SET_PREFETCH_NOP:
    case ZYDIS_ISA_SET_CLFSH:
    case ZYDIS_ISA_SET_CET:
    case ZYDIS_ISA_SET_RDPMC:
    case ZYDIS_ISA_SET_INVALID: return true;
    default: return false;
  }
}

// The families one instruction set belongs to (two for a 128/256-bit AVX-512 form: it also
// needs AVX-512VL); empty for the baseline.
std::vector<std::string> families_of_set(ZydisISASet set) {
  if (baseline_set(set)) return {};
  switch (set) {
    case ZYDIS_ISA_SET_SSE3:
    case ZYDIS_ISA_SET_SSE3X87: return {"SSE3"};
    case ZYDIS_ISA_SET_SSSE3:
    case ZYDIS_ISA_SET_SSSE3MMX: return {"SSSE3"};
    case ZYDIS_ISA_SET_SSE4: return {"SSE4.1"};
    case ZYDIS_ISA_SET_SSE42: return {"SSE4.2"};
    case ZYDIS_ISA_SET_POPCNT: return {"POPCNT"};
    case ZYDIS_ISA_SET_CMPXCHG16B: return {"CX16"};
    case ZYDIS_ISA_SET_LAHF: return {"LAHF-SAHF"};
    case ZYDIS_ISA_SET_AVX: return {"AVX"};
    case ZYDIS_ISA_SET_AVX2:
    case ZYDIS_ISA_SET_AVX2GATHER: return {"AVX2"};
    case ZYDIS_ISA_SET_BMI1: return {"BMI1"};
    case ZYDIS_ISA_SET_BMI2: return {"BMI2"};
    case ZYDIS_ISA_SET_F16C: return {"F16C"};
    case ZYDIS_ISA_SET_FMA: return {"FMA"};
    case ZYDIS_ISA_SET_LZCNT: return {"LZCNT"};
    case ZYDIS_ISA_SET_MOVBE: return {"MOVBE"};
    case ZYDIS_ISA_SET_XSAVE: return {"XSAVE"};
    case ZYDIS_ISA_SET_XSAVEOPT: return {"XSAVEOPT"};
    case ZYDIS_ISA_SET_XSAVEC: return {"XSAVEC"};
    case ZYDIS_ISA_SET_XSAVES: return {"XSAVES"};
    case ZYDIS_ISA_SET_AES: return {"AES"};
    case ZYDIS_ISA_SET_AVXAES: return {"AES", "AVX"};
    case ZYDIS_ISA_SET_PCLMULQDQ: return {"PCLMULQDQ"};
    case ZYDIS_ISA_SET_VPCLMULQDQ: return {"VPCLMULQDQ"};
    case ZYDIS_ISA_SET_GFNI:
    case ZYDIS_ISA_SET_AVX_GFNI: return {"GFNI"};
    case ZYDIS_ISA_SET_VAES: return {"VAES"};
    case ZYDIS_ISA_SET_SHA: return {"SHA"};
    case ZYDIS_ISA_SET_RDRAND: return {"RDRAND"};
    case ZYDIS_ISA_SET_RDSEED: return {"RDSEED"};
    case ZYDIS_ISA_SET_ADOX_ADCX: return {"ADX"};
    case ZYDIS_ISA_SET_RDWRFSGS: return {"FSGSBASE"};
    case ZYDIS_ISA_SET_CLFLUSHOPT: return {"CLFLUSHOPT"};
    case ZYDIS_ISA_SET_CLWB: return {"CLWB"};
    case ZYDIS_ISA_SET_PKU: return {"PKU"};
    case ZYDIS_ISA_SET_RDPID: return {"RDPID"};
    case ZYDIS_ISA_SET_AVX_VNNI: return {"AVX-VNNI"};
    default: break;
  }
  // AVX-512: "AVX512F_512", "AVX512BW_KOP", "AVX512_VNNI_256" → "AVX-512F", "AVX-512BW",
  // "AVX-512VNNI" (+ "AVX-512VL" for the 128/256-bit forms). The _128N forms (vmovd/vmovq-like
  // moves) need no VL.
  std::string name = ZydisISASetGetString(set);
  if (name.starts_with("AVX512")) {
    auto us = name.rfind('_');
    std::string size = us == std::string::npos ? "" : name.substr(us + 1);
    std::string base = us == std::string::npos ? name.substr(6) : name.substr(6, us - 6);
    if (base.starts_with("_")) base.erase(0, 1);
    // "AVX512_VPCLMULQDQ_128" and friends are the EVEX forms of a family of their own.
    if (base == "VPCLMULQDQ" || base == "VAES" || base == "GFNI") return {base, "AVX-512F"};
    std::vector<std::string> out{"AVX-512" + base};
    if (size == "128" || size == "256") out.emplace_back("AVX-512VL");
    return out;
  }
  return {name};  // Zydis's own name for anything else (SSE4A, FMA4, RDTSCP, MONITOR ...)
}

// families_of_set for every set, worked out once: it runs for every decoded instruction.
const std::vector<std::string>& families_cached(ZydisISASet set) {
  static const auto table = [] {
    std::vector<std::vector<std::string>> t(ZYDIS_ISA_SET_MAX_VALUE + 1);
    for (int i = 0; i <= ZYDIS_ISA_SET_MAX_VALUE; ++i) t[i] = families_of_set(static_cast<ZydisISASet>(i));
    return t;
  }();
  return table[set];
}

int level_of(std::string_view platform, std::string_view family) {
  const target::IsaFamily* f = target::find_family(platform, family);
  return f ? f->level : 0;
}

// Sort key: by level (level-0 families last), then by the table's order, then by name.
std::tuple<int, std::size_t, std::string> order_key(std::string_view platform, const std::string& family) {
  int level = level_of(platform, family);
  const auto families = target::isa_families(platform);
  std::size_t index = families.size();
  for (std::size_t i = 0; i < families.size(); ++i)
    if (families[i].name == family) index = i;
  return {level == 0 ? 99 : level, index, family};
}

/// `part` names CPU features: a clone suffix of function multiversioning.
bool feature_word(std::string_view part) {
  if (part.starts_with("arch_")) return true;
  for (std::string_view f : {"avx", "sse", "ssse", "fma", "bmi", "f16c", "popcnt", "lzcnt", "movbe", "aes", "pclmul",
                             "sha", "vpclmulqdq", "vaes", "gfni", "amx", "adx"})
    if (part.starts_with(f)) return true;
  return false;
}

struct FunctionSymbol {
  std::size_t section = 0;
  std::uint64_t value = 0, size = 0;
  std::string name;
};

std::vector<FunctionSymbol> function_symbols(Elf* elf) {
  std::vector<FunctionSymbol> out;
  for (GElf_Word type : {SHT_SYMTAB, SHT_DYNSYM}) {
    for (Elf_Scn* scn = elf_nextscn(elf, nullptr); scn; scn = elf_nextscn(elf, scn)) {
      GElf_Shdr shdr;
      if (!gelf_getshdr(scn, &shdr) || shdr.sh_type != type || shdr.sh_entsize == 0) continue;
      Elf_Data* data = elf_getdata(scn, nullptr);
      if (!data) continue;
      std::size_t count = shdr.sh_size / shdr.sh_entsize;
      for (std::size_t i = 0; i < count; ++i) {
        GElf_Sym sym;
        if (!gelf_getsym(data, static_cast<int>(i), &sym)) break;
        if (GELF_ST_TYPE(sym.st_info) != STT_FUNC || sym.st_shndx == SHN_UNDEF) continue;
        const char* name = elf_strptr(elf, shdr.sh_link, sym.st_name);
        if (name && *name) out.push_back({sym.st_shndx, sym.st_value, sym.st_size, name});
      }
    }
    if (!out.empty()) break;  // .symtab when there is one, else the exported .dynsym
  }
  return out;
}

Result<ZydisDecoder> x86_64_decoder() {
  ZydisDecoder decoder;
  if (!ZYAN_SUCCESS(ZydisDecoderInit(&decoder, ZYDIS_MACHINE_MODE_LONG_64, ZYDIS_STACK_WIDTH_64)))
    return failure("cannot initialise the Zydis decoder");
  // No operand decoding: the mnemonic and ISA set are all that is needed.
  ZydisDecoderEnableMode(&decoder, ZYDIS_DECODER_MODE_MINIMAL, ZYAN_TRUE);
  return decoder;
}

/// Decodes executable sections, counting each family and where it is first used: in the code
/// every CPU runs, or in dispatched code (a dispatch section, a multiversioning clone).
struct CodeScan {
  ZydisDecoder decoder;
  std::vector<FunctionSymbol> symbols;
  std::map<std::string, FamilyUse> found;
  std::map<std::string, FamilyUse> found_dispatched;
  IsaUse& use;
  Elf* elf = nullptr;
  /// Functions that run only after a CPU check, and why: multiversioning clones, libgcc's
  /// AArch64 outline atomics.
  std::vector<std::pair<const FunctionSymbol*, std::string>> dispatched_functions{};
  std::string section_dispatch{};  ///< the section being read is dispatched: why

  /// `relocatable`: a .o, whose addresses are offsets in their section.
  void section(Elf_Scn* scn, bool relocatable) {
    GElf_Shdr shdr;
    if (!gelf_getshdr(scn, &shdr) || !(shdr.sh_flags & SHF_EXECINSTR) || shdr.sh_type == SHT_NOBITS) return;
    std::size_t names = 0;
    const char* name = elf_getshdrstrndx(elf, &names) == 0 ? elf_strptr(elf, names, shdr.sh_name) : nullptr;
    section_dispatch = name && is_dispatched_section(name) ? std::string("section ") + name : std::string();
    Elf_Data* data = elf_rawdata(scn, nullptr);
    if (!data || !data->d_buf) return;
    const auto* code = static_cast<const std::uint8_t*>(data->d_buf);
    const std::size_t size = data->d_size, index = elf_ndxscn(scn);
    const std::uint64_t base = relocatable ? 0 : shdr.sh_addr;
    if (use.platform == "aarch64") return aarch64_words(code, size, base, index);
    x86_64_instructions(code, size, base, index);
  }

  /// A64: fixed little-endian 32-bit words, each classified by its encoding.
  void aarch64_words(const std::uint8_t* code, std::size_t size, std::uint64_t base, std::size_t index) {
    for (std::size_t off = 0; off + 4 <= size; off += 4) {
      const std::uint32_t w = std::uint32_t(code[off]) | std::uint32_t(code[off + 1]) << 8 |
                              std::uint32_t(code[off + 2]) << 16 | std::uint32_t(code[off + 3]) << 24;
      if (aarch64_unallocated(w)) {
        use.undecodable += 4;
        continue;
      }
      ++use.instructions;
      const std::string_view family = aarch64_family(w);
      if (family.empty()) continue;
      char text[24];
      std::snprintf(text, sizeof text, ".inst 0x%08x", static_cast<unsigned>(w));
      count(std::string(family), text, base + off, index);
    }
  }

  void x86_64_instructions(const std::uint8_t* code, std::size_t size, std::uint64_t base, std::size_t index) {
    ZydisDecodedInstruction ins;
    for (std::size_t off = 0; off < size;) {
      if (!ZYAN_SUCCESS(ZydisDecoderDecodeInstruction(&decoder, nullptr, code + off, size - off, &ins))) {
        ++use.undecodable;
        ++off;
        continue;
      }
      ++use.instructions;
      // TZCNT is `rep bsf`: where BMI1 is missing it runs as BSF, and gcc emits it for generic
      // x86-64 code (__builtin_ctz). XGETBV is feature detection (libgcc's __builtin_cpu_supports
      // runs it only after cpuid reports OSXSAVE). Neither says what CPU the code needs.
      if (ins.mnemonic != ZYDIS_MNEMONIC_TZCNT && ins.mnemonic != ZYDIS_MNEMONIC_XGETBV)
        for (auto& family : families_cached(ins.meta.isa_set))
          count(family, ZydisMnemonicGetString(ins.mnemonic), base + off, index);
      off += ins.length;
    }
  }

  /// Why the code at `address` runs only where the CPU has what it uses; empty: it runs everywhere.
  std::string dispatch_of(std::uint64_t address, std::size_t section_index) const {
    if (!section_dispatch.empty()) return section_dispatch;
    for (const auto& [s, why] : dispatched_functions)
      if (s->section == section_index && address >= s->value && address < s->value + s->size) return why;
    return {};
  }

  void count(const std::string& family, const char* mnemonic, std::uint64_t address, std::size_t section_index) {
    std::string dispatch = dispatch_of(address, section_index);
    auto [it, fresh] = (dispatch.empty() ? found : found_dispatched).try_emplace(family);
    FamilyUse& f = it->second;
    ++f.count;
    if (!fresh) return;
    f.family = family;
    f.level = level_of(use.platform, family);
    f.first_address = address;
    f.first_mnemonic = mnemonic;
    f.dispatch = std::move(dispatch);
    for (const auto& s : symbols)
      if (s.section == section_index && address >= s.value && address < s.value + s.size) f.first_symbol = s.name;
  }
};

/// Why `symbol` runs only after a CPU check on `platform`; empty when it may run anywhere.
std::string dispatch_of_symbol(std::string_view platform, const std::string& symbol) {
  if (platform == "x86_64" && is_dispatch_clone(symbol)) return "multiversioning clone " + symbol;
  // libgcc's -moutline-atomics helpers (gcc 10 on, the default): each runs its LSE instruction
  // only when __aarch64_have_lse_atomics says the CPU has LSE, and the armv8-a sequence otherwise.
  if (platform == "aarch64" && symbol.starts_with("__aarch64_") && symbol != "__aarch64_have_lse_atomics")
    return "libgcc outline atomic " + symbol;
  return {};
}

}  // namespace

bool is_dispatched_section(std::string_view section_name) { return section_name.starts_with(kDispatchSection); }

bool is_dispatch_clone(std::string_view symbol) {
  const auto dot = symbol.find('.');
  if (dot == std::string_view::npos || dot == 0) return false;
  std::string_view rest = symbol.substr(dot + 1);
  // gcc: "f.avx2", "f.arch_x86_64_v4"; clang: "f.avx2.0", "f.arch_x86-64-v4.1".
  const std::string_view first = rest.substr(0, rest.find('.'));
  return first != "default" && feature_word(first);
}

std::string IsaUse::level_name() const { return target::level_name(platform, level); }

std::string IsaUse::summary() const {
  if (!analysed) return "not analysed (" + why + ")";
  std::vector<std::string> outside, dispatched_names;
  for (const auto& f : families)
    if (f.level == 0) outside.push_back(f.family);
  for (const auto& f : dispatched) dispatched_names.push_back(f.family);
  std::string out = level_name();
  if (!outside.empty()) out += " + " + strings::join(outside, ", ");
  if (!dispatched_names.empty()) out += "; dispatched at run time: " + strings::join(dispatched_names, ", ");
  return out;
}

Result<IsaUse> read_isa(std::string_view bytes) {
  auto image = OPFORGE_TRY(ElfImage::open(bytes));
  GElf_Ehdr ehdr;
  if (!gelf_getehdr(image->get(), &ehdr)) return bad_input(std::string("cannot read ELF: ") + elf_errmsg(-1));
  IsaUse use;
  const target::Platform* platform = target::platform_of_elf(ehdr.e_machine);
  if (!platform || !target::cpu_machine(platform->name)) {
    use.why = "code of no machine opforge builds for (e_machine " + std::to_string(ehdr.e_machine) + ")";
    return use;
  }
  use.platform = std::string(platform->name);
  use.analysed = true;
  CodeScan scan{OPFORGE_TRY(x86_64_decoder()), function_symbols(image->get()), {}, {}, use, image->get()};
  for (const auto& s : scan.symbols)
    if (auto why = dispatch_of_symbol(use.platform, s.name); !why.empty())
      scan.dispatched_functions.emplace_back(&s, std::move(why));
  for (Elf_Scn* scn = elf_nextscn(image->get(), nullptr); scn; scn = elf_nextscn(image->get(), scn))
    scan.section(scn, ehdr.e_type == ET_REL);
  for (auto& [name, f] : scan.found) {
    use.level = std::max(use.level, f.level);
    use.families.push_back(std::move(f));
  }
  for (auto& [name, f] : scan.found_dispatched) use.dispatched.push_back(std::move(f));
  const auto by_order = [&](const FamilyUse& a, const FamilyUse& b) {
    return order_key(use.platform, a.family) < order_key(use.platform, b.family);
  };
  std::sort(use.families.begin(), use.families.end(), by_order);
  std::sort(use.dispatched.begin(), use.dispatched.end(), by_order);
  return use;
}

std::vector<FamilyUse> above_target(const IsaUse& use, const target::CpuTarget& target,
                                    const std::set<std::string>& allowed) {
  std::vector<FamilyUse> out;
  for (const auto& f : use.families)
    if (!target.allows(f.family) && !allowed.contains(f.family)) out.push_back(f);
  return out;
}

std::string describe_use(const FamilyUse& use) {
  char addr[32];
  std::snprintf(addr, sizeof addr, "0x%llx", static_cast<unsigned long long>(use.first_address));
  std::string out = use.family + " (" + std::to_string(use.count) + ", first " + use.first_mnemonic + " at " + addr;
  if (!use.first_symbol.empty()) out += " in " + use.first_symbol;
  return out + ")";
}

Result<std::vector<IsaCheck>> check_cpu_target(const std::vector<std::pair<std::string, std::string_view>>& files,
                                               const target::CpuTarget& target,
                                               const std::function<IsaAllowance(const std::string&)>& allowance) {
  std::vector<IsaCheck> out;
  for (const auto& [path, bytes] : files) {
    if (bytes.size() < 4 || bytes.substr(0, 4) != std::string_view("\x7f"
                                                                   "ELF",
                                                                   4))
      continue;
    auto use = read_isa(bytes);
    if (!use) return bad_input(path + ": " + use.error().message);
    if (use->analysed && use->platform != target.platform)
      return bad_input(
          path + ": " + use->platform + " code, but cpu_target \"" + target.name + "\" is a CPU of " + target.platform,
          "pin a cpu_target of the machine the wheel is built for (" +
              strings::join(target::cpu_target_names(use->platform), ", ") + ")");
    IsaCheck c{path, std::move(*use), {}, {}, {}};
    IsaAllowance allowed = allowance ? allowance(path) : IsaAllowance{};
    for (auto& f : above_target(c.use, target)) {
      if (allowed.everything || allowed.families.contains(f.family)) {
        c.dispatched.push_back(f);
        c.why_allowed = allowed.why;
      } else {
        c.above.push_back(f);
      }
    }
    out.push_back(std::move(c));
  }
  return out;
}

Status require_cpu_target(const std::vector<IsaCheck>& checks, const target::CpuTarget& target) {
  std::string msg;
  for (const auto& c : checks) {
    if (c.above.empty()) continue;
    std::vector<std::string> parts;
    for (const auto& f : c.above) parts.push_back(describe_use(f));
    msg += "\n  " + c.path + ": " + strings::join(parts, ", ");
  }
  if (msg.empty()) return {};
  return failure("the wheel holds code above cpu_target \"" + target.name + "\":" + msg,
                 "the project compiles these files for a newer CPU by other means than -march=native "
                 "(e.g. -mavx512f or -march=<cpu> in its flags): remove those flags, or, when the file "
                 "picks its SIMD code at run time (cpuid), list it in [build] cpu_dispatch");
}

}  // namespace opforge::wheel
