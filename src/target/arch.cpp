#include "target/arch.h"

#include <algorithm>
#include <cctype>
#include <map>

#include "util/numbers.h"
#include "util/strings.h"

namespace opforge::target {

std::string Arch::str() const {
  std::string s = std::to_string(major) + "." + std::to_string(minor);
  if (suffix) s += suffix;
  if (ptx) s += "+PTX";
  return s;
}

std::string Arch::sm() const {
  std::string s = std::to_string(major) + std::to_string(minor);
  if (suffix) s += suffix;
  return s;
}

std::vector<std::string> Arch::gencode() const {
  std::vector<std::string> out{"-gencode=arch=compute_" + sm() + ",code=sm_" + sm()};
  if (ptx) out.push_back("-gencode=arch=compute_" + sm() + ",code=compute_" + sm());
  return out;
}

std::string arch_list_str(const std::vector<Arch>& arches) {
  std::vector<std::string> parts;
  for (const auto& a : arches) parts.push_back(a.str());
  return strings::join(parts, ";");
}

std::string cmake_architectures(const std::vector<Arch>& arches) {
  std::vector<std::string> parts;
  for (const auto& a : arches) {
    parts.push_back(a.sm() + "-real");
    if (a.ptx) parts.push_back(a.sm() + "-virtual");
  }
  return strings::join(parts, ";");
}

namespace {

/// CMake's bare numbers, ';'-separated, each once: "80;90a". CMake itself reads a bare number as
/// SASS + PTX; bitsandbytes and TransformerEngine add -real or PTX by their own rules, so +PTX has
/// no spelling here.
std::string sm_numbers(const std::vector<Arch>& arches) {
  std::vector<std::string> parts;
  for (const auto& a : arches)
    if (std::find(parts.begin(), parts.end(), a.sm()) == parts.end()) parts.push_back(a.sm());
  return strings::join(parts, ";");
}

/// "X.Y" with the suffix, ' '-separated, each once: "8.0 9.0a" (flashinfer splits on one space
/// and reads no +PTX).
std::string dotted(const std::vector<Arch>& arches) {
  std::vector<std::string> parts;
  for (auto a : arches) {
    a.ptx = false;
    if (std::find(parts.begin(), parts.end(), a.str()) == parts.end()) parts.push_back(a.str());
  }
  return strings::join(parts, " ");
}

constexpr ArchForm kForms[] = {
    {"torch", "8.0;9.0a+PTX", "TORCH_CUDA_ARCH_LIST's own spelling (PyTorch, vLLM)", arch_list_str},
    {"cmake", "80-real;90a-real;90a-virtual",
     "CMAKE_CUDA_ARCHITECTURES exactly: SASS as -real, +PTX as one more -virtual", cmake_architectures},
    {"numbers", "80;90a",
     "bare numbers, ';'-separated, no +PTX (bitsandbytes' COMPUTE_CAPABILITY, TransformerEngine's NVTE_CUDA_ARCHS)",
     sm_numbers},
    {"dotted", "8.0 9.0a", "X.Y, ' '-separated, no +PTX (flashinfer's FLASHINFER_CUDA_ARCH_LIST)", dotted},
};

// PyTorch's named arches (torch/utils/cpp_extension.py), docs/reference.md §3.
const std::map<std::string, std::string>& named_arches() {
  static const std::map<std::string, std::string> table = {
      {"Kepler+Tesla", "3.7"},     {"Kepler", "3.5+PTX"},
      {"Maxwell+Tegra", "5.3"},    {"Maxwell", "5.0;5.2+PTX"},
      {"Pascal", "6.0;6.1+PTX"},   {"Volta+Tegra", "7.2"},
      {"Volta", "7.0+PTX"},        {"Turing", "7.5+PTX"},
      {"Ampere+Tegra", "8.7"},     {"Ampere", "8.0;8.6+PTX"},
      {"Ada", "8.9+PTX"},          {"Hopper", "9.0+PTX"},
      {"Blackwell+Tegra", "11.0"}, {"Blackwell", "10.0;10.3;12.0;12.1+PTX"},
  };
  return table;
}

std::optional<Arch> parse_entry(std::string_view e) {
  Arch a;
  std::string_view rest = e;
  if (rest.ends_with("+PTX")) {
    a.ptx = true;
    rest.remove_suffix(4);
  }
  auto dot = rest.find('.');
  if (dot == std::string_view::npos || dot == 0) return std::nullopt;
  auto major = rest.substr(0, dot);
  auto minor = rest.substr(dot + 1);
  if (!minor.empty() && (minor.back() == 'a' || minor.back() == 'f')) {
    a.suffix = minor.back();
    minor.remove_suffix(1);
  }
  if (minor.size() != 1 || major.size() > 2) return std::nullopt;
  for (char c : major)
    if (!std::isdigit(static_cast<unsigned char>(c))) return std::nullopt;
  if (!std::isdigit(static_cast<unsigned char>(minor[0]))) return std::nullopt;
  a.major = numbers::parse_int<int>(major).value_or(0);  // at most two digits: always fits
  a.minor = minor[0] - '0';
  return a;
}

}  // namespace

Result<std::vector<Arch>> parse_arch_list(std::string_view text) {
  // As torch.utils.cpp_extension: spaces become ';', then every ';'-separated entry must be valid
  // (so "8.6;;" and "8.0; 9.0" are errors there too). Only the ends are trimmed.
  std::size_t first = text.find_first_not_of(" \t");
  if (first == std::string_view::npos)
    return bad_input("empty architecture list", "write entries like 8.0;9.0+PTX",
                     Location{{}, 0, 1, std::string(text)});
  std::size_t last = text.find_last_not_of(" \t");
  std::vector<Arch> out;
  std::size_t i = first;
  while (i <= last + 1) {
    std::size_t start = i;
    while (i <= last && text[i] != ';' && text[i] != ' ') ++i;
    std::string entry(text.substr(start, i - start));
    ++i;
    Location where{{}, 0, static_cast<int>(start) + 1, std::string(text)};
    if (auto named = named_arches().find(entry); named != named_arches().end()) {
      for (auto& part : strings::split(named->second, ';')) out.push_back(*parse_entry(part));
      continue;
    }
    auto a = entry.empty() ? std::nullopt : parse_entry(entry);
    if (!a) {
      std::vector<std::string> names;
      for (auto& [n, _] : named_arches()) names.push_back(n);
      std::string hint =
          "write entries like 8.6, 9.0a or 9.0+PTX (or a name such as Ampere), "
          "separated by one ';' or one space";
      if (auto g = strings::did_you_mean(entry, names); g && !entry.empty())
        hint = "did you mean '" + *g + "'? " + hint;
      return bad_input(entry.empty() ? "empty entry in the arch list"
                                     : "invalid architecture '" + strings::cut(entry) + "' in the arch list",
                       hint, where);
    }
    out.push_back(*a);
  }
  return out;
}

Result<std::vector<Arch>> check_arch_list(std::string_view text) {
  std::size_t start = 0;
  for (auto& entry : strings::split(text, ';')) {
    if (strings::trim(entry).empty())
      return opforge::unexpected(Error{ErrorKind::bad_input, "empty entry in the arch list",
                                       "remove the extra ';' (entries look like 8.6 or 9.0+PTX)",
                                       Location{{}, 0, static_cast<int>(start) + 1, {}}});
    start += entry.size() + 1;
  }
  return parse_arch_list(text);
}

std::span<const ArchForm> arch_forms() { return kForms; }

const ArchForm* find_arch_form(std::string_view name) {
  for (const auto& f : kForms)
    if (f.name == name) return &f;
  return nullptr;
}

std::string arch_form_names() {
  std::vector<std::string> names;
  for (const auto& f : kForms) names.emplace_back(f.name);
  return strings::join(names, ", ");
}

}  // namespace opforge::target
