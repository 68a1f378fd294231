// What a wheel needs of a node, read from the wheel (and the build record beside it).
#include <algorithm>

#include "record/record.h"
#include "rollout/rollout.h"
#include "util/strings.h"

namespace opforge::rollout {
namespace {

/// CUDA libraries whose soname carries the CUDA major (libcudart.so.13, libcublas.so.12, ...).
constexpr std::string_view kCudaLibraries[] = {"libcudart.so.", "libcublas.so.", "libcublasLt.so.", "libcusparse.so.",
                                               "libcufft.so.",  "libcurand.so.", "libnvrtc.so."};

}  // namespace

WheelNeeds wheel_needs(const wheel::Inspection& in, const std::string& record_cuda) {
  WheelNeeds out;
  out.filename = in.filename;
  if (auto name = wheel::parse_wheel_filename(in.filename)) {
    out.python_tags = strings::split(name->python, '.');
    out.abi_tags = strings::split(name->abi, '.');
    out.platforms = strings::split(name->platform, '.');
  }
  std::map<std::string, wheel::ElfInfo> elfs;
  for (const auto& f : in.files) {
    if (!f.elf) continue;
    elfs.emplace(f.path, *f.elf);
    // cpu_level is an x86-64 psABI level: another machine's code has none to compare with a node's.
    if (f.isa && f.isa->analysed && f.isa->platform == "x86_64") out.cpu_level = std::max(out.cpu_level, f.isa->level);
    if (!f.elf->fatbin.empty()) out.gpu_libraries.push_back({f.path, f.elf->fatbin});
  }
  out.system = wheel::system_needs(elfs, in.requirements);
  for (const auto& line : in.requires_dist) {
    std::string_view req = strings::trim(line);
    if (req.find(';') != std::string_view::npos || wheel::requirement_name(req) != "torch") continue;
    // "torch>=2.12", "torch (==2.15.*)": the specifiers after the name, without parentheses.
    std::string spec;
    for (char c : req.substr(std::string_view("torch").size()))
      if (c != '(' && c != ')' && c != ' ') spec += c;
    out.torch = spec;
  }
  // The exact toolkit from the record; else the CUDA major of a CUDA library a file needs; else
  // the CUDA that introduced the newest PTX it holds.
  if (!record_cuda.empty()) {
    out.cuda = record_cuda;
    return out;
  }
  for (const auto& [path, elf] : elfs)
    for (const auto& needed : elf.needed)
      for (auto prefix : kCudaLibraries)
        if (needed.starts_with(prefix) && out.cuda.empty()) {
          out.cuda = needed.substr(prefix.size());
          out.cuda = out.cuda.substr(0, out.cuda.find('.'));
        }
  if (!out.cuda.empty()) return out;
  std::pair<int, int> newest{0, 0};
  for (const auto& lib : out.gpu_libraries)
    for (const auto& img : lib.images) newest = std::max(newest, img.ptx_isa);
  if (auto v = cuda_of_ptx_isa(newest.first, newest.second)) out.cuda = v->str();
  return out;
}

Result<WheelNeeds> read_wheel_needs(const probe::FileSystem& fs, const fs::path& wheel) {
  auto in = OPFORGE_TRY(wheel::inspect(fs, wheel));
  std::string cuda;
  const fs::path record_file = record::path_for(wheel);
  if (fs.resolved_type(record_file) == probe::FileType::regular)
    if (auto r = record::load(fs, record_file)) {
      const auto& tk = r->inputs.contains("toolkit") ? r->inputs["toolkit"] : nlohmann::json();
      if (tk.is_object() && tk.contains("version") && tk["version"].is_string())
        cuda = tk["version"].get<std::string>();
    }
  return wheel_needs(in, cuda);
}

}  // namespace opforge::rollout
