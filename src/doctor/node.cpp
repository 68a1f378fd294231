#include "doctor/node.h"

#include <algorithm>
#include <array>
#include <set>

#include "devices/resolve.h"
#include "target/platform.h"
#include "util/numbers.h"
#include "util/scan.h"
#include "util/strings.h"
#include "util/version.h"
#include "wheel/wheel.h"

namespace opforge::doctor {
namespace {

/// Where distributions keep the system's C and C++ runtimes (Debian/Ubuntu multiarch, named by the
/// triple of the machine opforge was built for, then the RHEL/SUSE lib64 folders): the ones a
/// wheel's libraries load unless an environment brings its own.
std::array<std::filesystem::path, 4> lib_dirs() {
  const std::string triple(target::host_platform().triple);
  return {"/lib/" + triple, "/usr/lib/" + triple, "/lib64", "/usr/lib64"};
}

std::vector<std::string> defined_versions(probe::Machine m, std::string_view soname) {
  for (const auto& dir : lib_dirs()) {
    auto bytes = m.fs.read_file(dir / soname, 64ull << 20);
    if (!bytes) continue;
    auto info = wheel::read_elf(*bytes);
    if (info) return info->defined_versions;
  }
  return {};
}

/// "3.4.30" ordered as numbers, part by part.
bool dotted_less(const std::string& a, const std::string& b) {
  auto pa = strings::split(a, '.'), pb = strings::split(b, '.');
  for (std::size_t i = 0; i < std::max(pa.size(), pb.size()); ++i) {
    const int x = i < pa.size() ? numbers::parse_int<int>(pa[i]).value_or(0) : 0;
    const int y = i < pb.size() ? numbers::parse_int<int>(pb[i]).value_or(0) : 0;
    if (x != y) return x < y;
  }
  return false;
}

}  // namespace

std::string newest_version(const std::vector<std::string>& versions, std::string_view prefix) {
  std::string best;
  const std::string head = std::string(prefix) + "_";
  for (const auto& v : versions) {
    if (!v.starts_with(head)) continue;
    const std::string number = v.substr(head.size());
    if (!scan::is_dotted_number(number)) continue;
    if (best.empty() || dotted_less(best, number)) best = number;
  }
  return best;
}

int cpu_level_of_cpuinfo(std::string_view cpuinfo) {
  for (const auto& line : strings::split(cpuinfo, '\n')) {
    auto colon = line.find(':');
    if (colon == std::string::npos || strings::trim(std::string_view(line).substr(0, colon)) != "flags") continue;
    std::set<std::string> flags;
    for (const auto& f : strings::split(strings::trim(std::string_view(line).substr(colon + 1)), ' '))
      if (!f.empty()) flags.insert(f);
    auto has = [&](std::initializer_list<std::string_view> names) {
      return std::all_of(names.begin(), names.end(),
                         [&](std::string_view n) { return flags.contains(std::string(n)); });
    };
    // The kernel's names: pni is SSE3, abm is LZCNT (x86-64-psABI's level table).
    if (!has({"cx16", "lahf_lm", "popcnt", "pni", "sse4_1", "sse4_2", "ssse3"})) return 1;
    if (!has({"avx", "avx2", "bmi1", "bmi2", "f16c", "fma", "abm", "movbe", "xsave"})) return 2;
    if (!has({"avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl"})) return 3;
    return 4;
  }
  return 0;
}

std::string nvidia_driver_version(std::string_view text) {
  auto lines = strings::split(text, '\n');
  if (lines.empty() || !lines[0].starts_with("NVRM version:")) return "";
  for (const auto& word : strings::split(lines[0], ' ')) {
    auto v = strings::trim(word);
    if (v.find('.') != std::string_view::npos && scan::is_dotted_number(v)) return std::string(v);
  }
  return "";
}

NodeInfo read_node(probe::Machine m) {
  NodeInfo n;
  for (const char* file : {"/proc/sys/kernel/hostname", "/etc/hostname"})
    if (auto text = m.fs.read_file(file); text && !strings::trim(*text).empty()) {
      n.host = std::string(strings::trim(*text));
      break;
    }
  // The machine this opforge was built for is the one it runs on (under qemu-user too, whose
  // `uname -m` says the same): a wheel's code must be for it.
  n.machine = std::string(target::host_platform().name);
  auto libc = defined_versions(m, "libc.so.6");
  if (auto v = newest_version(libc, "GLIBC"); !v.empty())
    if (auto parsed = parse_version(v); parsed && parsed->major == 2) n.glibc_minor = parsed->minor;
  auto cxx = defined_versions(m, "libstdc++.so.6");
  n.glibcxx = newest_version(cxx, "GLIBCXX");
  n.cxxabi = newest_version(cxx, "CXXABI");
  // An x86-64 level is an x86-64 opforge's question: under emulation (qemu-user, an arm64 root on
  // an x86-64 machine) /proc/cpuinfo is the host's, and its flags say nothing of this machine.
  if (target::host_platform().name == "x86_64")
    if (auto text = m.fs.read_file("/proc/cpuinfo")) n.cpu_level = cpu_level_of_cpuinfo(*text);
  if (auto text = m.fs.read_file("/proc/driver/nvidia/version")) n.driver_version = nvidia_driver_version(*text);
  // Asked even without the /proc file (a container may not show it): the CUDA it supports bounds
  // the driver from below too.
  n.driver_cuda = devices::driver_cuda_version(m);
  return n;
}

}  // namespace opforge::doctor
