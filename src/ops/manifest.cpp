#include <algorithm>

#include "ops/ops.h"
#include "recipe/toml_reader.h"
#include "util/scan.h"
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

/// Every string of the manifest except free text (description, a probe's C code) goes into a
/// command line in build.ninja, where a line break ends the command and starts another: refuse
/// control characters in them here, where the error can point at the file.
Status check_strings(const TomlReader& r, const toml::node& node, std::string_view key) {
  if (key == "description" || key == "code") return {};
  if (auto* s = node.as_string()) {
    const std::string& v = s->get();
    for (std::size_t i = 0; i < v.size(); ++i) {
      auto c = static_cast<unsigned char>(v[i]);
      if (c < 0x20 || c == 0x7F)
        return std::unexpected(r.error_at(node, std::string(key) + ": '" + strings::cut(v) +
                                                    "' contains a control character (code " +
                                                    std::to_string(c) + ")",
                                          "flags, paths and names are one line of printable text"));
    }
  } else if (auto* a = node.as_array()) {
    for (auto& item : *a) OPFORGE_CHECK(check_strings(r, item, key));
  } else if (auto* t = node.as_table()) {
    for (auto&& [k, v] : *t) {
      for (char c : k.str())
        if (static_cast<unsigned char>(c) < 0x20 || c == 0x7F)
          return std::unexpected(Error{ErrorKind::bad_input, "a key contains a control character",
                                       "flags, paths and names are one line of printable text",
                                       r.at(k.source())});
      OPFORGE_CHECK(check_strings(r, v, k.str()));
    }
  }
  return {};
}

/// A path of the manifest (source or include folder) relative to the op's folder must stay
/// inside `root` (the source tree): compiling it must not read, nor its object be written,
/// outside. `op_in_root` is the op's folder relative to root.
Status check_inside(const TomlReader& r, const toml::node& node, const std::string& value,
                    std::string_view key, const fs::path& op_in_root) {
  fs::path p(value);
  std::string why;
  if (value.empty()) why = "is empty";
  else if (p.is_absolute()) why = "is an absolute path";
  else if (value.find('|') != std::string::npos) why = "contains '|', which build.ninja cannot hold in a path";
  else {
    fs::path in_root = (op_in_root / p).lexically_normal();
    if (!in_root.empty() && *in_root.begin() == "..") why = "leads outside the source tree";
  }
  if (why.empty()) return {};
  return std::unexpected(r.error_at(node, std::string(key) + " '" + strings::cut(value) + "' " + why,
                                    "name files and folders relative to the op's folder, inside the source tree"));
}

/// `[a-z][a-z0-9_]*`
bool is_op_name(std::string_view s) {
  return !s.empty() && scan::is_lower(s.front()) &&
         std::ranges::all_of(s, [](char c) { return scan::is_lower(c) || scan::is_digit(c) || c == '_'; });
}

/// `DS_BUILD_[A-Z0-9_]+`
bool is_build_var(std::string_view s) {
  return s.starts_with("DS_BUILD_") && s.size() > 9 &&
         std::ranges::all_of(s.substr(9), [](char c) { return scan::is_upper(c) || scan::is_digit(c) || c == '_'; });
}

}  // namespace

Result<Manifest> parse_manifest(const fs::path& path, std::string_view text, const fs::path& root) {
  TomlReader r(path, text);
  toml::table doc = OPFORGE_TRY(r.parse());
  OPFORGE_CHECK(check_strings(r, doc, "op.toml"));
  // The op's folder relative to the source tree (default: the folder holding the ops).
  fs::path op_dir = path.parent_path();
  fs::path op_in_root = op_dir.filename();
  if (!root.empty()) {
    op_in_root = op_dir.lexically_normal().lexically_relative(root.lexically_normal());
    if (op_in_root.empty() || *op_in_root.begin() == "..")
      return bad_input("op folder '" + op_dir.string() + "' is outside the source tree '" + root.string() + "'",
                       "keep [source] ops_dir inside the source tree");
  }
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
  if (m.name.size() > 64 || !is_op_name(m.name))
    return std::unexpected(r.error_at(*name, "op name '" + strings::cut(m.name) + "' must match [a-z][a-z0-9_]*"));
  auto* kind = doc.get("kind");
  if (!kind) return whole("op.toml has no 'kind'", "add kind = \"cpu\" or kind = \"cuda\"");
  auto k = OPFORGE_TRY(r.string(*kind, "kind"));
  if (k == "cpu") m.kind = Kind::cpu;
  else if (k == "cuda") m.kind = Kind::cuda;
  else return std::unexpected(r.error_at(*kind, "kind must be \"cpu\" or \"cuda\", not \"" + strings::cut(k) + "\""));
  if (auto* n = doc.get("description")) m.description = OPFORGE_TRY(r.string(*n, "description"));
  m.build_var = "DS_BUILD_" + strings::to_upper(m.name);
  if (auto* n = doc.get("build_var")) {
    m.build_var = OPFORGE_TRY(r.string(*n, "build_var"));
    if (m.build_var.size() > 128 || !is_build_var(m.build_var))
      return std::unexpected(r.error_at(*n, "build_var '" + strings::cut(m.build_var) + "' must look like DS_BUILD_<NAME>"));
  }
  auto* sources = doc.get("sources");
  if (!sources) return whole("op.toml has no 'sources'", "list the op's .cpp/.cu files");
  const auto* source_items = sources->as_array();
  std::size_t index = 0;
  for (auto& s : OPFORGE_TRY(r.string_array(*sources, "sources"))) {
    OPFORGE_CHECK(check_inside(r, *source_items->get(index++), s, "source", op_in_root));
    fs::path p = fs::path(s).lexically_normal();
    auto ext = p.extension().string();
    if (ext != ".cpp" && ext != ".cc" && ext != ".c" && ext != ".cu")
      return std::unexpected(r.error_at(*sources, "source '" + strings::cut(s) + "' is not .cpp, .cc, .c or .cu"));
    if (ext == ".cu" && m.kind == Kind::cpu)
      return std::unexpected(r.error_at(*sources, "source '" + strings::cut(s) + "' is CUDA but kind is \"cpu\"",
                                        "set kind = \"cuda\""));
    m.sources.push_back(p);
  }
  if (m.sources.empty()) return std::unexpected(r.error_at(*sources, "sources is empty"));
  if (auto* n = doc.get("include_dirs")) {
    std::size_t i = 0;
    for (auto& s : OPFORGE_TRY(r.string_array(*n, "include_dirs"))) {
      OPFORGE_CHECK(check_inside(r, *n->as_array()->get(i++), s, "include folder", op_in_root));
      m.include_dirs.emplace_back(s);
    }
  }
  if (auto* n = doc.get("cxx_flags")) m.cxx_flags = OPFORGE_TRY(r.string_array(*n, "cxx_flags"));
  if (auto* n = doc.get("nvcc_flags")) {
    m.nvcc_flags = OPFORGE_TRY(r.string_array(*n, "nvcc_flags"));
    // nvcc passes its arguments to its own steps through /bin/sh (in double quotes): '$' and '`'
    // would be expanded, or run a command.
    for (std::size_t i = 0; i < m.nvcc_flags.size(); ++i)
      if (auto at = m.nvcc_flags[i].find_first_of("$`"); at != std::string::npos)
        return std::unexpected(r.error_at(*n->as_array()->get(i),
                                          "nvcc flag '" + strings::cut(m.nvcc_flags[i]) + "' contains '" +
                                              std::string(1, m.nvcc_flags[i][at]) +
                                              "', which nvcc's own shell would expand (or run)",
                                          "write the value itself, without '$' or '`'"));
  }
  if (auto* n = doc.get("ldflags")) m.ldflags = OPFORGE_TRY(r.string_array(*n, "ldflags"));
  if (auto* n = doc.get("libraries")) m.libraries = OPFORGE_TRY(r.string_array(*n, "libraries"));
  for (auto& flag : m.cxx_flags)
    if (flag == "-march=native")
      return std::unexpected(r.error_at(*doc.get("cxx_flags"), "-march=native makes wheels crash on other CPUs",
                                        "use [source_flags] for ISA flags and dispatch at run time"));
  if (auto* n = doc.get("source_flags")) {
    const toml::table* t = OPFORGE_TRY(r.table(*n, "source_flags"));
    for (auto&& [key, v] : *t) {
      std::string file = fs::path(std::string(key.str())).lexically_normal().generic_string();
      if (std::find(m.sources.begin(), m.sources.end(), fs::path(file)) == m.sources.end())
        return std::unexpected(Error{ErrorKind::bad_input,
                                     "source_flags names '" + strings::cut(key.str()) + "', which is not in sources", {},
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

Result<std::vector<Manifest>> load_manifests(probe::Machine m, const fs::path& ops_dir,
                                             const fs::path& root) {
  if (m.fs.resolved_type(ops_dir) != probe::FileType::directory)
    return bad_input("ops folder '" + ops_dir.string() + "' does not exist",
                     "set [source] ops_dir to the folder holding <op>/op.toml");
  std::vector<Manifest> out;
  for (auto& entry : OPFORGE_TRY(m.fs.list_directory(ops_dir))) {
    fs::path file = ops_dir / entry / "op.toml";
    if (m.fs.resolved_type(file) != probe::FileType::regular) continue;
    auto text = OPFORGE_TRY(m.fs.read_file(file));
    auto manifest = OPFORGE_TRY(parse_manifest(file, text, root.empty() ? ops_dir : root));
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
