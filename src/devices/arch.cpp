#include <algorithm>
#include <array>
#include <cctype>
#include <map>

#include <toml++/toml.h>
#include "devices/arch.h"
#include "devices/resolve.h"

#include "util/numbers.h"
#include "util/strings.h"

namespace opforge::devices {

std::string ArchDecision::str() const { return target::arch_list_str(arches); }

std::vector<Gpu> parse_nvidia_smi(std::string_view text) {
  std::vector<Gpu> out;
  for (auto& line : strings::split(text, '\n')) {
    auto fields = strings::split(line, ',');
    if (fields.size() < 3) continue;
    Gpu g;
    auto idx = std::string(strings::trim(fields[0]));
    auto cap = parse_version(strings::trim(fields[2]));
    auto index = numbers::parse_int<int>(idx);
    if (!index || *index < 0 || !cap) continue;
    g.index = *index;
    g.name = std::string(strings::trim(fields[1]));
    g.major = cap->major;
    g.minor = cap->minor;
    if (fields.size() > 3) g.uuid = std::string(strings::trim(fields[3]));
    out.push_back(g);
  }
  return out;
}

std::vector<target::Arch> parse_list_gpu_arch(std::string_view text) {
  std::vector<target::Arch> out;
  for (auto& line : strings::split(text, '\n')) {
    auto t = strings::trim(line);
    if (!t.starts_with("compute_")) continue;
    auto num = t.substr(8);
    if (num.size() < 2) continue;
    bool digits =
        std::all_of(num.begin(), num.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
    if (!digits) continue;
    target::Arch a;
    auto major = numbers::parse_int<int>(num.substr(0, num.size() - 1));
    if (!major) continue;
    a.major = *major;
    a.minor = num.back() - '0';
    out.push_back(a);
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::vector<target::Arch> table_accepted(const Version& v) {
  struct Row {
    Version from;
    std::vector<target::Arch> sms;
  };
  static const std::vector<Row> rows = [] {
    // Compiled in from toolchains/cuda-gpu-targets.toml (CMakeLists.txt); tests check it parses.
    static constexpr std::string_view text =
#include "opforge/cuda-gpu-targets.toml.inc"
        ;
    std::vector<Row> out;
    auto table = toml::parse(text, std::string_view("toolchains/cuda-gpu-targets.toml"));
    for (auto& node : *table["targets"].as_array()) {
      auto& r = *node.as_table();
      Row row{*parse_version(r["from"].value_or(std::string())), {}};
      for (auto& sm : *r["sm"].as_array()) {
        const int s = int(sm.value_or(0));
        row.sms.push_back(target::Arch{s / 10, s % 10});
      }
      out.push_back(std::move(row));
    }
    std::sort(out.begin(), out.end(), [](const Row& a, const Row& b) { return b.from < a.from; });
    return out;
  }();
  for (auto& r : rows)
    if (v >= r.from) return r.sms;
  return {};
}

}  // namespace opforge::devices
