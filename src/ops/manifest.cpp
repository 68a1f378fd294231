#include <algorithm>
#include <regex>

#include "ops/ops.h"
#include "recipe/toml_reader.h"
#include "util/strings.h"

namespace opforge::ops {

using recipe::TomlReader;

namespace {

Result<Probe> parse_probe(const TomlReader& r, const toml::node& node) {
  const toml::table* t = OPFORGE_TRY(r.table(node, "probe"));
  OPFORGE_CHECK(r.check_keys(*t, {"name", "header", "code", "libraries", "packages"}, "[[probe]]"));
  Probe p;
  for (const char* key : {"name", "code"})
    if (!t->get(key))
      return std::unexpected(r.error_at(node, std::string("[[probe]] needs a '") + key + "' key"));
  p.name = OPFORGE_TRY(r.string(*t->get("name"), "probe.name"));
  p.code = OPFORGE_TRY(r.string(*t->get("code"), "probe.code"));
  if (auto* n = t->get("header")) p.header = OPFORGE_TRY(r.string(*n, "probe.header"));
  if (auto* n = t->get("libraries")) p.libraries = OPFORGE_TRY(r.string_array(*n, "probe.libraries"));
  if (auto* n = t->get("packages")) {
    const toml::table* pk = OPFORGE_TRY(r.table(*n, "probe.packages"));
    for (auto&& [k, v] : *pk) p.packages[std::string(k.str())] = OPFORGE_TRY(r.string(v, "probe.packages"));
  }
  return p;
}

}  // namespace

Result<Manifest> parse_manifest(const fs::path& path, std::string_view text) {
  TomlReader r(path, text);
  toml::table doc = OPFORGE_TRY(r.parse());
  OPFORGE_CHECK(r.check_keys(doc, {"name", "kind", "description", "build_var", "sources",
                                   "include_dirs", "cxx_flags", "nvcc_flags", "ldflags",
                                   "libraries", "source_flags", "probe"},
                             "op.toml"));
  auto whole = [&](std::string msg, std::string hint = {}) {
    return std::unexpected(Error{ErrorKind::bad_input, std::move(msg), std::move(hint),
                                 Location{path.string(), 0, 0, {}}});
  };
  Manifest m;
  m.dir = path.parent_path();
  auto* name = doc.get("name");
  if (!name) return whole("op.toml has no 'name'", "add name = \"<op>\" ([a-z][a-z0-9_]*)");
  m.name = OPFORGE_TRY(r.string(*name, "name"));
  if (!std::regex_match(m.name, std::regex("[a-z][a-z0-9_]*")))
    return std::unexpected(r.error_at(*name, "op name '" + m.name + "' must match [a-z][a-z0-9_]*"));
  auto* kind = doc.get("kind");
  if (!kind) return whole("op.toml has no 'kind'", "add kind = \"cpu\" or kind = \"cuda\"");
  auto k = OPFORGE_TRY(r.string(*kind, "kind"));
  if (k == "cpu") m.kind = Kind::cpu;
  else if (k == "cuda") m.kind = Kind::cuda;
  else return std::unexpected(r.error_at(*kind, "kind must be \"cpu\" or \"cuda\", not \"" + k + "\""));
  if (auto* n = doc.get("description")) m.description = OPFORGE_TRY(r.string(*n, "description"));
  m.build_var = "DS_BUILD_" + strings::to_upper(m.name);
  if (auto* n = doc.get("build_var")) {
    m.build_var = OPFORGE_TRY(r.string(*n, "build_var"));
    if (!std::regex_match(m.build_var, std::regex("DS_BUILD_[A-Z0-9_]+")))
      return std::unexpected(r.error_at(*n, "build_var '" + m.build_var + "' must look like DS_BUILD_<NAME>"));
  }
  auto* sources = doc.get("sources");
  if (!sources) return whole("op.toml has no 'sources'", "list the op's .cpp/.cu files");
  for (auto& s : OPFORGE_TRY(r.string_array(*sources, "sources"))) {
    fs::path p(s);
    auto ext = p.extension().string();
    if (ext != ".cpp" && ext != ".cc" && ext != ".c" && ext != ".cu")
      return std::unexpected(r.error_at(*sources, "source '" + s + "' is not .cpp, .cc, .c or .cu"));
    if (ext == ".cu" && m.kind == Kind::cpu)
      return std::unexpected(r.error_at(*sources, "source '" + s + "' is CUDA but kind is \"cpu\"",
                                        "set kind = \"cuda\""));
    m.sources.push_back(p);
  }
  if (m.sources.empty()) return std::unexpected(r.error_at(*sources, "sources is empty"));
  if (auto* n = doc.get("include_dirs"))
    for (auto& s : OPFORGE_TRY(r.string_array(*n, "include_dirs"))) m.include_dirs.emplace_back(s);
  if (auto* n = doc.get("cxx_flags")) m.cxx_flags = OPFORGE_TRY(r.string_array(*n, "cxx_flags"));
  if (auto* n = doc.get("nvcc_flags")) m.nvcc_flags = OPFORGE_TRY(r.string_array(*n, "nvcc_flags"));
  if (auto* n = doc.get("ldflags")) m.ldflags = OPFORGE_TRY(r.string_array(*n, "ldflags"));
  if (auto* n = doc.get("libraries")) m.libraries = OPFORGE_TRY(r.string_array(*n, "libraries"));
  for (auto& flag : m.cxx_flags)
    if (flag == "-march=native")
      return std::unexpected(r.error_at(*doc.get("cxx_flags"), "-march=native makes wheels crash on other CPUs",
                                        "use [source_flags] for ISA flags and dispatch at run time"));
  if (auto* n = doc.get("source_flags")) {
    const toml::table* t = OPFORGE_TRY(r.table(*n, "source_flags"));
    for (auto&& [key, v] : *t) {
      std::string file(key.str());
      if (std::find(m.sources.begin(), m.sources.end(), fs::path(file)) == m.sources.end())
        return std::unexpected(Error{ErrorKind::bad_input,
                                     "source_flags names '" + file + "', which is not in sources", {},
                                     r.at(key.source())});
      m.source_flags[file] = OPFORGE_TRY(r.string_array(v, "source_flags"));
    }
  }
  if (auto* n = doc.get("probe")) {
    auto* arr = n->as_array();
    if (!arr) return std::unexpected(r.error_at(*n, "probe must be an array of tables ([[probe]])"));
    for (auto& item : *arr) m.probes.push_back(OPFORGE_TRY(parse_probe(r, item)));
  }
  m.library_name = "libopforge_" + m.name + ".so";
  return m;
}

Result<std::vector<Manifest>> load_manifests(probe::Machine m, const fs::path& ops_dir) {
  if (m.fs.resolved_type(ops_dir) != probe::FileType::directory)
    return bad_input("ops folder '" + ops_dir.string() + "' does not exist",
                     "set [source] ops_dir to the folder holding <op>/op.toml");
  std::vector<Manifest> out;
  for (auto& entry : OPFORGE_TRY(m.fs.list_directory(ops_dir))) {
    fs::path file = ops_dir / entry / "op.toml";
    if (m.fs.resolved_type(file) != probe::FileType::regular) continue;
    auto text = OPFORGE_TRY(m.fs.read_file(file));
    auto manifest = OPFORGE_TRY(parse_manifest(file, text));
    for (auto& other : out) {
      if (other.name == manifest.name || other.build_var == manifest.build_var)
        return bad_input("ops '" + other.dir.string() + "' and '" + manifest.dir.string() +
                         "' share the name or build variable " + manifest.build_var);
    }
    out.push_back(std::move(manifest));
  }
  std::sort(out.begin(), out.end(), [](auto& a, auto& b) { return a.name < b.name; });
  return out;
}

}  // namespace opforge::ops
