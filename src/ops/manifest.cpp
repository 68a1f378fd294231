#include <algorithm>
#include <cstdio>

#include "ops/ops.h"
#include "recipe/toml_reader.h"
#include "target/platform.h"
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
    if (!t->get(key)) return opforge::unexpected(r.error_at(node, std::string("[[probe]] needs a '") + key + "' key"));
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
        return opforge::unexpected(r.error_at(node,
                                              std::string(key) + ": '" + strings::cut(v) +
                                                  "' contains a control character (code " + std::to_string(c) + ")",
                                              "flags, paths and names are one line of printable text"));
    }
  } else if (auto* a = node.as_array()) {
    for (auto& item : *a) OPFORGE_CHECK(check_strings(r, item, key));
  } else if (auto* t = node.as_table()) {
    for (auto&& [k, v] : *t) {
      for (char c : k.str())
        if (static_cast<unsigned char>(c) < 0x20 || c == 0x7F)
          return opforge::unexpected(Error{ErrorKind::bad_input, "a key contains a control character",
                                           "flags, paths and names are one line of printable text", r.at(k.source())});
      OPFORGE_CHECK(check_strings(r, v, k.str()));
    }
  }
  return {};
}

/// A path of the manifest (source or include folder) relative to the op's folder must stay
/// inside `root` (the source tree): compiling it must not read, nor its object be written,
/// outside. `op_in_root` is the op's folder relative to root.
Status check_inside(const TomlReader& r, const toml::node& node, const std::string& value, std::string_view key,
                    const fs::path& op_in_root) {
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
  return opforge::unexpected(r.error_at(node, std::string(key) + " '" + strings::cut(value) + "' " + why,
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

/// The op's folder relative to the source tree (default: the folder holding the ops).
Result<fs::path> op_folder_in_root(const fs::path& path, const fs::path& root) {
  fs::path op_dir = path.parent_path();
  if (root.empty()) return op_dir.filename();
  fs::path op_in_root = op_dir.lexically_normal().lexically_relative(root.lexically_normal());
  if (op_in_root.empty() || *op_in_root.begin() == "..")
    return bad_input("op folder '" + op_dir.string() + "' is outside the source tree '" + root.string() + "'",
                     "keep [source] ops_dir inside the source tree");
  return op_in_root;
}

/// A required key that is missing: the error points at the file as a whole.
opforge::unexpected<Error> missing(const fs::path& path, std::string message, std::string hint) {
  return opforge::unexpected(
      Error{ErrorKind::bad_input, std::move(message), std::move(hint), Location{path.string(), 0, 0, {}}});
}

Result<std::string> parse_name(const TomlReader& r, const toml::table& doc, const fs::path& path) {
  auto* node = doc.get("name");
  if (!node) return missing(path, "op.toml has no 'name'", "add name = \"<op>\" ([a-z][a-z0-9_]*)");
  auto name = OPFORGE_TRY(r.string(*node, "name"));
  if (name.size() > 64 || !is_op_name(name))
    return opforge::unexpected(r.error_at(*node, "op name '" + strings::cut(name) + "' must match [a-z][a-z0-9_]*"));
  return name;
}

Result<Kind> parse_kind(const TomlReader& r, const toml::table& doc, const fs::path& path) {
  auto* node = doc.get("kind");
  if (!node) return missing(path, "op.toml has no 'kind'", "add kind = \"cpu\" or kind = \"cuda\"");
  auto k = OPFORGE_TRY(r.string(*node, "kind"));
  if (k == "cpu") return Kind::cpu;
  if (k == "cuda") return Kind::cuda;
  return opforge::unexpected(r.error_at(*node, "kind must be \"cpu\" or \"cuda\", not \"" + strings::cut(k) + "\""));
}

Result<std::string> parse_build_var(const TomlReader& r, const toml::table& doc, const std::string& name) {
  auto* node = doc.get("build_var");
  if (!node) return "DS_BUILD_" + strings::to_upper(name);
  auto var = OPFORGE_TRY(r.string(*node, "build_var"));
  if (var.size() > 128 || !is_build_var(var))
    return opforge::unexpected(
        r.error_at(*node, "build_var '" + strings::cut(var) + "' must look like DS_BUILD_<NAME>"));
  return var;
}

/// The files of a `sources` array (top level or a machine's), each checked: inside the tree, a
/// C, C++ or CUDA file, CUDA only in a CUDA op.
Result<std::vector<fs::path>> source_list(const TomlReader& r, const toml::node& sources, std::string_view key,
                                          Kind kind, const fs::path& op_in_root) {
  const auto* items = sources.as_array();
  std::vector<fs::path> out;
  std::size_t index = 0;
  for (auto& s : OPFORGE_TRY(r.string_array(sources, key))) {
    OPFORGE_CHECK(check_inside(r, *items->get(index++), s, "source", op_in_root));
    fs::path p = fs::path(s).lexically_normal();
    auto ext = p.extension().string();
    if (ext != ".cpp" && ext != ".cc" && ext != ".c" && ext != ".cu")
      return opforge::unexpected(r.error_at(sources, "source '" + strings::cut(s) + "' is not .cpp, .cc, .c or .cu"));
    if (ext == ".cu" && kind == Kind::cpu)
      return opforge::unexpected(
          r.error_at(sources, "source '" + strings::cut(s) + "' is CUDA but kind is \"cpu\"", "set kind = \"cuda\""));
    out.push_back(p);
  }
  return out;
}

Result<std::vector<fs::path>> parse_sources(const TomlReader& r, const toml::table& doc, const fs::path& path,
                                            Kind kind, const fs::path& op_in_root) {
  auto* sources = doc.get("sources");
  if (!sources) return missing(path, "op.toml has no 'sources'", "list the op's .cpp/.cu files");
  auto out = OPFORGE_TRY(source_list(r, *sources, "sources", kind, op_in_root));
  if (out.empty()) return opforge::unexpected(r.error_at(*sources, "sources is empty"));
  return out;
}

Result<std::vector<fs::path>> parse_include_dirs(const TomlReader& r, const toml::table& doc,
                                                 const fs::path& op_in_root) {
  std::vector<fs::path> out;
  auto* n = doc.get("include_dirs");
  if (!n) return out;
  std::size_t i = 0;
  for (auto& s : OPFORGE_TRY(r.string_array(*n, "include_dirs"))) {
    OPFORGE_CHECK(check_inside(r, *n->as_array()->get(i++), s, "include folder", op_in_root));
    out.emplace_back(s);
  }
  return out;
}

Result<std::vector<std::string>> parse_nvcc_flags(const TomlReader& r, const toml::table& doc) {
  auto* n = doc.get("nvcc_flags");
  if (!n) return std::vector<std::string>{};
  auto flags = OPFORGE_TRY(r.string_array(*n, "nvcc_flags"));
  // nvcc passes its arguments to its own steps through /bin/sh (in double quotes): '$' and '`'
  // would be expanded, or run a command.
  for (std::size_t i = 0; i < flags.size(); ++i)
    if (auto at = flags[i].find_first_of("$`"); at != std::string::npos)
      return opforge::unexpected(r.error_at(*n->as_array()->get(i),
                                            "nvcc flag '" + strings::cut(flags[i]) + "' contains '" +
                                                std::string(1, flags[i][at]) +
                                                "', which nvcc's own shell would expand (or run)",
                                            "write the value itself, without '$' or '`'"));
  return flags;
}

Result<std::vector<std::string>> optional_strings(const TomlReader& r, const toml::table& doc, const char* key) {
  auto* n = doc.get(key);
  if (!n) return std::vector<std::string>{};
  return r.string_array(*n, key);
}

Status check_cxx_flags(const TomlReader& r, const toml::table& doc, const std::vector<std::string>& flags) {
  for (auto& flag : flags)
    if (flag == "-march=native")
      return opforge::unexpected(r.error_at(*doc.get("cxx_flags"), "-march=native makes wheels crash on other CPUs",
                                            "use [source_flags] for ISA flags and dispatch at run time"));
  return {};
}

/// A `[source_flags]` table (top level or a machine's): each key must be one of `sources`.
Result<std::map<std::string, std::vector<std::string>>> source_flag_table(const TomlReader& r, const toml::node& node,
                                                                          std::string_view key,
                                                                          const std::vector<fs::path>& sources) {
  std::map<std::string, std::vector<std::string>> out;
  const toml::table* t = OPFORGE_TRY(r.table(node, key));
  for (auto&& [name, v] : *t) {
    std::string file = fs::path(std::string(name.str())).lexically_normal().generic_string();
    if (std::find(sources.begin(), sources.end(), fs::path(file)) == sources.end())
      return opforge::unexpected(
          Error{ErrorKind::bad_input,
                std::string(key) + " names '" + strings::cut(name.str()) + "', which is not in sources",
                {},
                r.at(name.source())});
    out[file] = OPFORGE_TRY(r.string_array(v, key));
  }
  return out;
}

Result<std::map<std::string, std::vector<std::string>>> parse_source_flags(const TomlReader& r, const toml::table& doc,
                                                                           const std::vector<fs::path>& sources) {
  auto* n = doc.get("source_flags");
  if (!n) return std::map<std::string, std::vector<std::string>>{};
  return source_flag_table(r, *n, "source_flags", sources);
}

/// One `[machine.<platform>]`: its own sources (none of them also common) and flags for its
/// sources or the common ones.
Result<MachineSources> parse_machine(const TomlReader& r, const toml::node& node, const std::string& platform,
                                     const Manifest& m, const fs::path& op_in_root) {
  const std::string where = "machine." + platform;
  const toml::table* t = OPFORGE_TRY(r.table(node, where));
  OPFORGE_CHECK(r.check_keys(*t, {"sources", "source_flags"}, "[" + where + "]"));
  MachineSources out;
  if (auto* n = t->get("sources")) {
    out.sources = OPFORGE_TRY(source_list(r, *n, where + ".sources", m.kind, op_in_root));
    for (const auto& s : out.sources)
      if (std::find(m.sources.begin(), m.sources.end(), s) != m.sources.end())
        return opforge::unexpected(r.error_at(
            *n, where + ".sources names '" + strings::cut(s.string()) + "', which is already in the common sources",
            "list a file either for every machine or for its own"));
  }
  if (auto* n = t->get("source_flags")) {
    std::vector<fs::path> known = m.sources;
    known.insert(known.end(), out.sources.begin(), out.sources.end());
    out.source_flags = OPFORGE_TRY(source_flag_table(r, *n, where + ".source_flags", known));
  }
  return out;
}

/// `[machine.x86_64]`, `[machine.aarch64]`: keyed by target::Platform::name, nothing else.
Result<std::map<std::string, MachineSources>> parse_machines(const TomlReader& r, const toml::table& doc,
                                                             const Manifest& m, const fs::path& op_in_root) {
  std::map<std::string, MachineSources> out;
  auto* n = doc.get("machine");
  if (!n) return out;
  const toml::table* t = OPFORGE_TRY(r.table(*n, "machine"));
  for (auto&& [key, v] : *t) {
    std::string platform(key.str());
    const target::Platform* p = target::find_platform(platform);
    if (!p || p->name != platform)
      return opforge::unexpected(Error{ErrorKind::bad_input,
                                       "[machine." + strings::cut(platform) + "] names no machine opforge builds for",
                                       "the machines are " + target::platform_names(), r.at(key.source())});
    out[platform] = OPFORGE_TRY(parse_machine(r, v, platform, m, op_in_root));
  }
  return out;
}

Result<std::vector<Probe>> parse_probes(const TomlReader& r, const toml::table& doc) {
  std::vector<Probe> out;
  auto* n = doc.get("probe");
  if (!n) return out;
  auto* arr = n->as_array();
  if (!arr) return opforge::unexpected(r.error_at(*n, "probe must be an array of tables ([[probe]])"));
  for (auto& item : *arr) out.push_back(OPFORGE_TRY(parse_probe(r, item)));
  return out;
}

/// [python_extension]: name = "_x", sources = [...], limited_api = "3.8".
Result<std::optional<PythonExtension>> parse_python_extension(const TomlReader& r, const toml::table& doc,
                                                              const fs::path& op_in_root) {
  auto* n = doc.get("python_extension");
  if (!n) return std::optional<PythonExtension>{};
  const toml::table* t = OPFORGE_TRY(r.table(*n, "python_extension"));
  OPFORGE_CHECK(r.check_keys(*t, {"name", "sources", "limited_api"}, "[python_extension]"));
  PythonExtension ext;
  auto* name = t->get("name");
  if (!name) return opforge::unexpected(r.error_at(*n, "[python_extension] has no 'name'", "add name = \"_<module>\""));
  ext.name = OPFORGE_TRY(r.string(*name, "python_extension.name"));
  bool ok = !ext.name.empty() && ext.name.size() <= 64 && !(ext.name[0] >= '0' && ext.name[0] <= '9');
  for (char c : ext.name) ok &= (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
  if (!ok)
    return opforge::unexpected(
        r.error_at(*name, "extension name '" + strings::cut(ext.name) + "' must match [a-z_][a-z0-9_]*"));
  auto* sources = t->get("sources");
  if (!sources)
    return opforge::unexpected(r.error_at(*n, "[python_extension] has no 'sources'", "list its .c/.cpp files"));
  std::size_t index = 0;
  for (auto& s : OPFORGE_TRY(r.string_array(*sources, "python_extension.sources"))) {
    OPFORGE_CHECK(check_inside(r, *sources->as_array()->get(index++), s, "source", op_in_root));
    fs::path p = fs::path(s).lexically_normal();
    auto ext_name = p.extension().string();
    if (ext_name != ".c" && ext_name != ".cpp" && ext_name != ".cc")
      return opforge::unexpected(
          r.error_at(*sources, "extension source '" + strings::cut(s) + "' is not .c, .cpp or .cc"));
    ext.sources.push_back(p);
  }
  if (ext.sources.empty()) return opforge::unexpected(r.error_at(*sources, "python_extension.sources is empty"));
  if (auto* api = t->get("limited_api")) {
    auto v = OPFORGE_TRY(r.string(*api, "python_extension.limited_api"));
    int minor = -1;
    if (v.starts_with("3.") && v.size() > 2 && v.size() <= 4 &&
        std::all_of(v.begin() + 2, v.end(), [](char c) { return c >= '0' && c <= '9'; }))
      minor = std::stoi(v.substr(2));
    if (minor < 2)
      return opforge::unexpected(r.error_at(*api, "limited_api '" + strings::cut(v) + "' is not a Python 3 version",
                                            "write the oldest Python the extension serves, e.g. \"3.8\" (3.2 at least: "
                                            "the stable ABI began there)"));
    ext.floor_minor = minor;
  }
  return std::optional<PythonExtension>{std::move(ext)};
}

}  // namespace

std::string PythonExtension::limited_api_macro() const {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x03%02X0000", static_cast<unsigned>(floor_minor));
  return buf;
}

Manifest for_platform(const Manifest& op, std::string_view platform) {
  Manifest out = op;
  out.machines.clear();
  auto own = op.machines.find(std::string(platform));
  if (own == op.machines.end()) return out;
  out.sources.insert(out.sources.end(), own->second.sources.begin(), own->second.sources.end());
  for (const auto& [file, flags] : own->second.source_flags) {
    auto& to = out.source_flags[file];
    to.insert(to.end(), flags.begin(), flags.end());
  }
  return out;
}

Result<Manifest> parse_manifest(const fs::path& path, std::string_view text, const fs::path& root) {
  TomlReader r(path, text);
  toml::table doc = OPFORGE_TRY(r.parse());
  OPFORGE_CHECK(check_strings(r, doc, "op.toml"));
  const fs::path op_in_root = OPFORGE_TRY(op_folder_in_root(path, root));
  OPFORGE_CHECK(
      r.check_keys(doc,
                   {"name", "kind", "description", "build_var", "sources", "include_dirs", "cxx_flags", "nvcc_flags",
                    "ldflags", "libraries", "source_flags", "probe", "python_extension", "machine"},
                   "op.toml"));
  Manifest m;
  m.dir = path.parent_path();
  m.name = OPFORGE_TRY(parse_name(r, doc, path));
  m.kind = OPFORGE_TRY(parse_kind(r, doc, path));
  if (auto* n = doc.get("description")) m.description = OPFORGE_TRY(r.string(*n, "description"));
  m.build_var = OPFORGE_TRY(parse_build_var(r, doc, m.name));
  m.sources = OPFORGE_TRY(parse_sources(r, doc, path, m.kind, op_in_root));
  m.include_dirs = OPFORGE_TRY(parse_include_dirs(r, doc, op_in_root));
  m.cxx_flags = OPFORGE_TRY(optional_strings(r, doc, "cxx_flags"));
  m.nvcc_flags = OPFORGE_TRY(parse_nvcc_flags(r, doc));
  m.ldflags = OPFORGE_TRY(optional_strings(r, doc, "ldflags"));
  m.libraries = OPFORGE_TRY(optional_strings(r, doc, "libraries"));
  OPFORGE_CHECK(check_cxx_flags(r, doc, m.cxx_flags));
  m.source_flags = OPFORGE_TRY(parse_source_flags(r, doc, m.sources));
  m.machines = OPFORGE_TRY(parse_machines(r, doc, m, op_in_root));
  m.probes = OPFORGE_TRY(parse_probes(r, doc));
  m.library_name = "libopforge_" + m.name + ".so";
  m.python_extension = OPFORGE_TRY(parse_python_extension(r, doc, op_in_root));
  return m;
}

namespace {

/// The manifest's paths stay inside the tree as text (check_inside); here, once links are
/// followed: a source that is a link to a file outside the tree would be compiled in, and editing
/// that file would change the wheel's bytes under the same commit, with a record that says clean.
Status check_resolved_inside(probe::Machine m, const Manifest& op, const fs::path& file, const fs::path& root) {
  auto top = m.fs.canonical(root);
  if (!top) return {};
  auto check = [&](std::string_view what, const fs::path& rel) -> Status {
    const fs::path at = op.dir / rel;
    if (m.fs.resolved_type(at) == probe::FileType::none) return {};  // missing: the compile says so
    auto real = m.fs.canonical(at);
    if (!real) return {};
    const fs::path in_tree = real->lexically_relative(*top);
    if (!in_tree.empty() && *in_tree.begin() != "..") return {};
    return opforge::unexpected(
        Error{ErrorKind::bad_input,
              std::string(what) + " '" + strings::cut(rel.string()) + "' resolves to '" + strings::cut(real->string()) +
                  "', outside the source tree '" + strings::cut(top->string()) + "' (through a symbolic link)",
              "copy it into the tree: what goes into a wheel must be what the tree's commit describes",
              Location{file.string(), 0, 0, {}}});
  };
  OPFORGE_CHECK(check("the op folder", "."));
  for (auto& s : op.sources) OPFORGE_CHECK(check("source", s));
  for (const auto& [platform, own] : op.machines)
    for (auto& s : own.sources) OPFORGE_CHECK(check("source", s));
  for (auto& d : op.include_dirs) OPFORGE_CHECK(check("include folder", d));
  if (op.python_extension)
    for (auto& s : op.python_extension->sources) OPFORGE_CHECK(check("python_extension source", s));
  return {};
}

}  // namespace

Result<std::vector<Manifest>> load_manifests(probe::Machine m, const fs::path& ops_dir, const fs::path& root) {
  if (m.fs.resolved_type(ops_dir) != probe::FileType::directory)
    return bad_input("ops folder '" + ops_dir.string() + "' does not exist",
                     "set [source] ops_dir to the folder holding <op>/op.toml");
  std::vector<Manifest> out;
  for (auto& entry : OPFORGE_TRY(m.fs.list_directory(ops_dir))) {
    fs::path file = ops_dir / entry / "op.toml";
    if (m.fs.resolved_type(file) != probe::FileType::regular) continue;
    auto text = OPFORGE_TRY(m.fs.read_file(file));
    auto manifest = OPFORGE_TRY(parse_manifest(file, text, root.empty() ? ops_dir : root));
    OPFORGE_CHECK(check_resolved_inside(m, manifest, file, root.empty() ? ops_dir : root));
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
