/// The store entry (compile/pch/pch.h): where torch's headers are, the entry's key, the header it
/// holds, whether torch's headers change the prefix's macros, and the dependency file of a compile
/// that used it.
#include "compile/pch/detail.h"
#include "compile/pch/pch.h"
#include "compiler/host.h"
#include "util/hash.h"
#include "util/strings.h"

namespace opforge::compile::pch {

namespace {

std::string file_stamp(const probe::FileSystem& fs, const fs::path& p) {
  auto st = fs.stamp(p);
  return st ? std::to_string(st->size) + ":" + std::to_string(st->mtime_ns) : "none";
}

}  // namespace

fs::path torch_include_dir(const probe::FileSystem& fs, const CompileLine& c, const fs::path& cwd) {
  for (const auto& d : c.include_dirs) {
    const fs::path dir = fs::path(d).is_absolute() ? fs::path(d) : cwd / d;
    if (fs.resolved_type(dir / kHeader) == probe::FileType::regular) return dir;
  }
  return {};
}

std::string entry_key(const probe::FileSystem& fs, const fs::path& compiler, const std::vector<std::string>& args,
                      const fs::path& torch_dir, const std::vector<std::string>& prefix) {
  std::string k = "opforge-pch/3\n" + compiler.string() + "\n" + compiler::stamp(fs, compiler) + "\n";
  for (const auto& l : prefix) k += "prefix " + l + "\n";
  for (const auto& a : args) k += a + "\n";
  k += torch_dir.string() + "\n";
  auto version = fs.read_file(torch_dir.parent_path() / "version.py", 1u << 20);
  k += version ? sha256_hex(*version) : std::string("no version.py");
  k += "\n" + file_stamp(fs, torch_dir / kHeader) + "\n" + file_stamp(fs, torch_dir / "ATen/ATen.h") + "\n";
  return sha256_hex(k).substr(0, 16);
}

std::string header_text(const std::vector<std::string>& prefix) {
  std::string out = "// Written by opforge: the header precompiled beside it";
  out += prefix.empty() ? ".\n" : ", with what the sources read before it.\n";
  for (const auto& l : prefix) out += l + "\n";
  return out + "#include <" + std::string(kHeader) + ">\n";
}

std::map<std::string, std::string> macro_definitions(std::string_view dM) {
  std::map<std::string, std::string> out;
  for (auto line : strings::split(dM, '\n'))
    if (line.starts_with("#define ")) {
      auto name = macro_name(line.substr(8));
      if (!name.empty()) out[name] = std::string(line);
    }
  return out;
}

std::string macro_clash(std::string_view prefix_dM, std::string_view header_dM, const std::set<std::string>& macros) {
  const auto before = macro_definitions(prefix_dM), after = macro_definitions(header_dM);
  for (const auto& m : macros) {
    auto b = before.find(m), a = after.find(m);
    const std::string was = b == before.end() ? "undefined" : b->second,
                      is = a == after.end() ? "undefined" : a->second;
    if (was != is)
      return "torch's headers change " + m + ", which the sources set before including them (" + was + ", then " + is +
             "): their own line, read again after the header, would undo that";
  }
  return {};
}

std::string merge_depfile(std::string_view compile_deps, std::string_view header_deps, std::string_view drop) {
  // The header's prerequisites: everything after its rule's first ':' up to the rule's end.
  std::size_t colon = header_deps.find(": ");
  if (colon == std::string_view::npos) return std::string(compile_deps);
  std::string_view rest = header_deps.substr(colon + 2);
  std::size_t end = 0;
  while (end < rest.size() && !(rest[end] == '\n' && (end == 0 || rest[end - 1] != '\\'))) ++end;
  std::string extra;
  {
    // Its prerequisites one by one (a backslash-newline is a separator; "\ " an escaped space).
    std::string word;
    std::vector<std::string> words;
    const std::string_view text = rest.substr(0, end);
    for (std::size_t i = 0; i <= text.size(); ++i) {
      const char ch = i < text.size() ? text[i] : ' ';
      if (ch == '\\' && i + 1 < text.size() && text[i + 1] != '\n') {
        word += ch;
        word += text[++i];
      } else if (ch == ' ' || ch == '\t' || ch == '\n' || ch == '\\') {
        if (!word.empty() && word != drop) words.push_back(word);
        word.clear();
      } else {
        word += ch;
      }
    }
    extra = strings::join(words, " \\\n ");
  }
  // The compile's first rule ends at the first newline not escaped by a backslash.
  std::size_t stop = 0;
  while (stop < compile_deps.size() && !(compile_deps[stop] == '\n' && (stop == 0 || compile_deps[stop - 1] != '\\')))
    ++stop;
  std::string head(strings::trim(compile_deps.substr(0, stop)));
  std::string out = head + (extra.empty() ? "" : " \\\n " + extra) + "\n";
  if (stop < compile_deps.size()) out += std::string(compile_deps.substr(stop + 1));
  return out;
}

}  // namespace opforge::compile::pch
