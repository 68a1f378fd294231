// What a library needs of torch: its C++ ABI, its stable C ABI only, or nothing (wheel.h).
#include <cxxabi.h>

#include <cstdlib>
#include <memory>
#include <string_view>

#include "util/strings.h"
#include "wheel/wheel.h"

namespace opforge::wheel {

namespace {

/// A mangled name that names something of torch's C++ namespaces: a function in them
/// (_ZN2at6native..., _ZNK3c1010TensorImpl...) or one that takes their types (...RKN2at6TensorE).
/// Itanium mangling writes a nested name as N[K]<length><name><next component's length>..., and
/// at, c10 and torch are torch's.
bool cxx_torch_symbol(std::string_view s) {
  if (!s.starts_with("_Z")) return false;
  for (std::string_view ns : {"2at", "3c10", "5torch"}) {
    for (auto at = s.find(ns); at != std::string_view::npos; at = s.find(ns, at + 1)) {
      const bool nested = (at >= 1 && s[at - 1] == 'N') || (at >= 2 && s[at - 1] == 'K' && s[at - 2] == 'N');
      const std::size_t end = at + ns.size();
      if (nested && end < s.size() && s[end] >= '0' && s[end] <= '9') return true;
    }
  }
  return false;
}

/// torch's stable C ABI: the AOTInductor shim (aoti_torch_*) and the stable library's own C
/// functions (torch_*: torch_call_dispatcher, torch_new_list_reserve_size, ...).
bool stable_torch_symbol(std::string_view s) { return s.starts_with("aoti_torch_") || s.starts_with("torch_"); }

/// A symbol as it reads in C++ ("at::_ops::empty_like::call(...)"), cut short: what `inspect` and
/// the summary show as evidence. The mangled name when it cannot be demangled.
std::string readable(const std::string& mangled) {
  int status = 0;
  std::unique_ptr<char, decltype(&std::free)> out(abi::__cxa_demangle(mangled.c_str(), nullptr, nullptr, &status),
                                                  &std::free);
  std::string s = status == 0 && out ? std::string(out.get()) : mangled;
  // The arguments say little and take most of the line.
  if (auto paren = s.find('('); paren != std::string::npos && paren > 0) s = s.substr(0, paren) + "(...)";
  return strings::cut(s, 80);
}

}  // namespace

TorchLinkage torch_linkage(const ElfInfo& elf) {
  TorchLinkage cxx{TorchAbi::cxx, {}}, stable{TorchAbi::stable, {}};
  for (const auto& s : elf.unversioned_undefined) {
    if (cxx_torch_symbol(s)) {
      if (cxx.evidence.size() < 3) cxx.evidence.push_back(readable(s));
    } else if (stable_torch_symbol(s)) {
      if (stable.evidence.size() < 3) stable.evidence.push_back(s);
      stable.stable_symbols.push_back(s);
    }
  }
  if (!cxx.evidence.empty()) return cxx;
  if (!stable.evidence.empty()) return stable;
  return {};
}

std::string_view torch_abi_name(TorchAbi abi) {
  switch (abi) {
    case TorchAbi::cxx: return "C++ ABI";
    case TorchAbi::stable: return "stable C ABI";
    default: return "none";
  }
}

}  // namespace opforge::wheel
