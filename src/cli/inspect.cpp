// `opforge inspect WHEEL [--json]`: files, tags, what each ELF needs, the GPU code inside.
#include <iostream>
#include <nlohmann/json.hpp>
#include <set>

#include "cli/command.h"
#include "probe/machine.h"
#include "util/strings.h"
#include "wheel/wheel.h"

namespace opforge::cli {
namespace {

nlohmann::json to_json(const wheel::Inspection& in) {
  nlohmann::json j;
  j["wheel"] = in.filename;
  j["name"] = in.name;
  j["version"] = in.version;
  j["tags"] = in.tags;
  j["computed_platform"] = in.computed.platform;
  j["computed_platform_reasons"] = in.computed.reasons;
  j["valid"] = in.report.ok();
  j["problems"] = in.report.problems;
  j["files"] = nlohmann::json::array();
  for (const auto& f : in.files) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", f.mode);
    nlohmann::json fj{{"path", f.path}, {"size", f.size}, {"mode", mode}};
    if (f.elf) {
      nlohmann::json e;
      e["needed"] = f.elf->needed;
      e["soname"] = f.elf->soname;
      e["version_needs"] = f.elf->version_needs;
      e["stripped"] = !f.elf->has_symtab;
      e["fatbin"] = nlohmann::json::array();
      for (const auto& img : f.elf->fatbin)
        e["fatbin"].push_back({{"kind", img.kind == wheel::FatbinImage::Kind::ptx ? "ptx"
                                        : img.kind == wheel::FatbinImage::Kind::elf ? "elf"
                                                                                     : "unknown"},
                               {"name", img.name()},
                               {"arch", img.arch},
                               {"compressed", img.compressed},
                               {"size", img.size}});
      fj["elf"] = std::move(e);
    }
    j["files"].push_back(std::move(fj));
  }
  return j;
}

std::string text(const wheel::Inspection& in) {
  std::string out;
  out += in.filename + "\n";
  out += "  name: " + in.name + "\n  version: " + in.version + "\n";
  out += "  tags: " + strings::join(in.tags, ", ") + "\n";
  out += "  platform opforge computes: " + in.computed.platform + "\n";
  for (const auto& r : in.computed.reasons) out += "    because " + r + "\n";
  out += in.report.ok() ? "  RECORD, names and paths: valid\n" : "  problems:\n";
  for (const auto& p : in.report.problems) out += "    " + p + "\n";
  out += "  files:\n";
  for (const auto& f : in.files) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", f.mode);
    out += "    " + std::string(mode) + " " + std::to_string(f.size) + " " + f.path + "\n";
    if (!f.elf) continue;
    out += "      needed: " + strings::join(f.elf->needed, " ") + "\n";
    for (const auto& [lib, versions] : f.elf->version_needs) {
      std::vector<std::string> interesting;
      for (const auto& v : versions)
        if (v.starts_with("GLIBC") || v.starts_with("CXXABI") || v.starts_with("GCC"))
          interesting.push_back(v);
      if (!interesting.empty()) out += "      " + lib + ": " + strings::join(interesting, " ") + "\n";
    }
    if (!f.elf->fatbin.empty()) {
      std::set<std::string> sass, ptx;
      for (const auto& img : f.elf->fatbin)
        (img.kind == wheel::FatbinImage::Kind::ptx ? ptx : sass).insert(img.name());
      out += "      gpu code: " + strings::join({sass.begin(), sass.end()}, " ");
      if (!ptx.empty()) out += "  ptx: " + strings::join({ptx.begin(), ptx.end()}, " ");
      out += "\n";
    }
  }
  return out;
}

const Registrar kInspect{Registration{
    "inspect", "show a wheel's files, tags, ELF symbol versions and GPU architectures",
    [](CLI::App& app) -> Runner {
      auto wheel_path = std::make_shared<std::string>();
      auto json = std::make_shared<bool>(false);
      app.add_option("wheel", *wheel_path, "the .whl file")->required();
      app.add_flag("--json", *json, "print JSON");
      return [wheel_path, json]() -> Status {
        auto m = probe::real_machine();
        auto in = OPFORGE_TRY(wheel::inspect(m.fs, *wheel_path));
        if (*json)
          std::cout << to_json(in).dump(2) << "\n";
        else
          std::cout << text(in);
        return {};
      };
    }}};

}  // namespace
}  // namespace opforge::cli
