#include "ops/deepspeed.h"
#include "ops/cache.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "settings/settings.h"
#include "util/hash.h"
#include "util/json.h"
#include "util/json_read.h"
#include "util/strings.h"

namespace opforge::ops {
namespace {

/// opforge's probe of a DeepSpeed tree (src/python/probes/deepspeed_ops.py in the data folder): a
/// real file, linted with the package, run by the project's own Python.
fs::path probe_script(const probe::FileSystem& fs) {
  return probe::data_dir(fs) / "src/python/probes/deepspeed_ops.py";
}

/// The probe, checked to be there: a missing one is a broken installation, not bad input.
Result<fs::path> find_probe_script(const probe::FileSystem& fs) {
  fs::path script = probe_script(fs);
  if (fs.resolved_type(script) != probe::FileType::regular)
    return failure("opforge's DeepSpeed probe " + script.string() + " is missing",
                   "reinstall opforge (its data folder holds src/python/probes)");
  return script;
}

std::string tail(const std::string& text, std::size_t n) {
  return text.size() <= n ? text : "…" + text.substr(text.size() - n);
}

}  // namespace

bool has_op_builder(const probe::FileSystem& fs, const fs::path& root) {
  return fs.resolved_type(root / "op_builder" / "builder.py") == probe::FileType::regular;
}

Result<std::vector<Manifest>> parse_deepspeed_catalogue(const fs::path& root, std::string_view text) {
  namespace jr = util::json_read;
  auto j = util::json_parse(text);
  const auto* ops = jr::array(j, "ops");
  if (!ops)
    return failure("cannot read the op_builder catalogue of " + root.string() + ": " + tail(std::string(text), 300));
  std::vector<Manifest> out;
  for (auto& o : *ops) {
    auto name = jr::text(o, "name");
    if (!name) continue;
    Manifest m;
    m.name = *name;
    m.build_var = jr::text_or(o, "build_var");
    m.builder_class = jr::text_or(o, "class");
    m.kind = kind_from_name(jr::text_or(o, "kind", "cpu")).value_or(Kind::cpu);
    m.dir = root;
    for (auto& s : jr::texts(o, "sources")) m.sources.emplace_back(s);
    m.description = "DeepSpeed " + m.builder_class.substr(m.builder_class.find(':') + 1);
    out.push_back(std::move(m));
  }
  std::sort(out.begin(), out.end(), [](auto& a, auto& b) { return a.name < b.name; });
  return out;
}

Result<std::vector<Manifest>> load_deepspeed_catalogue(probe::Machine m, const fs::path& root,
                                                       const std::string& python) {
  const fs::path dir = root / "op_builder";
  if (!m.fs.list_directory(dir))
    return bad_input("cannot read DeepSpeed's op builders in '" + dir.string() + "'",
                     "check that the folder exists and is readable, or set [source] ops_dir");
  const fs::path script = OPFORGE_TRY(find_probe_script(m.fs));
  probe::Command cmd;
  cmd.argv = {python, script.string(), "catalogue", root.string()};
  cmd.timeout = std::chrono::seconds(60);
  auto r = m.proc.run(cmd);
  if (!r)
    return unsatisfied("cannot run " + python + " to read " + dir.string() + ": " + r.error().message,
                       "set [cuda] python (or --python) to the project's Python");
  if (!r->ok())
    return bad_input("cannot read DeepSpeed's op builders in '" + dir.string() +
                         "': " + tail(std::string(strings::trim(r->err)), 600),
                     "the op_builder/*.py files must be readable Python");
  auto ops = OPFORGE_TRY(parse_deepspeed_catalogue(root, r->out));
  if (ops.empty())
    return bad_input("'" + dir.string() + "' holds no op builder (a class with NAME and BUILD_VAR)",
                     "point [source] at a DeepSpeed tree, or use op.toml manifests");
  return ops;
}

Result<std::map<std::string, Compatibility>> parse_deepspeed_compatibility(std::string_view text) {
  auto j = util::json_parse(text);
  if (!j.is_object())
    return failure("cannot read the answer of DeepSpeed's is_compatible(): " + tail(std::string(text), 300));
  std::map<std::string, Compatibility> out;
  namespace jr = util::json_read;
  for (auto& [spec, v] : j.items()) {
    if (!v.is_object()) continue;
    Compatibility c{jr::flag(v, "ok").value_or(false), jr::text_or(v, "reason")};
    c.constructed = jr::text(v, "stage") == "builder";
    c.fix = jr::text_or(v, "fix");
    c.module = jr::text_or(v, "module");
    c.sources = jr::texts(v, "sources");
    c.extension = jr::text_or(v, "extension");
    c.host_args = jr::texts(v, "host_args");
    out[spec] = std::move(c);
  }
  return out;
}

namespace {

/// op_builder/'s files (relative path and sha256 of each, __pycache__ left out).
std::string op_builder_digest(probe::Machine m, const fs::path& root) {
  std::string text;
  std::vector<fs::path> todo = {root / "op_builder"};
  while (!todo.empty()) {
    fs::path d = todo.back();
    todo.pop_back();
    auto names = m.fs.list_directory(d);
    if (!names) continue;
    for (auto& n : *names) {
      if (n == "__pycache__") continue;
      auto p = d / n;
      if (m.fs.type_of(p) == probe::FileType::directory) todo.push_back(p);
      else if (auto body = m.fs.read_file(p))
        text += p.lexically_relative(root).string() + "\n" + sha256_hex(*body) + "\n";
    }
  }
  return text;
}

/// The key: op_builder/'s files, the probe, the Python binary, torch's identity, what
/// compatibility reads.
std::string compatibility_key(probe::Machine m, const CompatibilityQuery& q, const std::vector<std::string>& specs) {
  std::string text = op_builder_digest(m, q.root);
  if (auto body = m.fs.read_file(probe_script(m.fs))) text += "probe=" + sha256_hex(*body) + "\n";
  const fs::path py = locate_program(m, q.python).real;
  if (auto st = m.fs.stamp(py))
    text += py.string() + ":" + std::to_string(st->size) + ":" + std::to_string(st->mtime_ns) + "\n";
  for (auto& [k, v] : q.env)
    if (settings::read_by_deepspeed_builders(k)) text += k + "=" + v + "\n";
  text += "torch=" + q.torch_identity + "\n";
  text += strings::join(specs, "\n");
  return sha256_hex(text);
}

/// Runs is_compatible() of each builder class in `specs` with the project's Python.
Result<std::string> ask_deepspeed(probe::Machine m, const CompatibilityQuery& q,
                                  const std::vector<std::string>& specs) {
  const fs::path script = OPFORGE_TRY(find_probe_script(m.fs));
  probe::Command cmd;
  cmd.argv = {q.python, script.string(), "compat", q.root.string()};
  for (auto& s : specs) cmd.argv.push_back(s);
  cmd.env = q.env;
  cmd.cwd = q.root;
  cmd.timeout = std::chrono::seconds(600);
  auto r = m.proc.run(cmd);
  if (!r)
    return failure("cannot run " + q.python + " to ask DeepSpeed which ops are compatible: " + r.error().message,
                   "set [cuda] python (or --python) to the project's Python");
  if (!r->ok())
    return failure("DeepSpeed's is_compatible() check failed in " + q.python + ":\n" + tail(r->err, 1500),
                   "the project's Python must be able to import its op_builder (torch installed)");
  return std::move(r->out);
}

}  // namespace

Result<std::map<std::string, Compatibility>> deepspeed_compatibility(probe::Machine m, const CompatibilityQuery& q) {
  std::map<std::string, Compatibility> out;
  std::vector<std::string> specs;
  for (auto& op : q.ops) specs.push_back(op.builder_class);
  if (specs.empty()) return out;

  const std::string key = q.cache_dir.empty() ? std::string() : compatibility_key(m, q, specs);
  probe::JsonCache cache(m.fs, key.empty() ? fs::path() : q.cache_dir / "deepspeed-compat.json");
  if (auto* entry = cache.find(key)) {
    auto parsed = parse_deepspeed_compatibility(entry->dump());
    if (parsed && parsed->size() == specs.size()) {
      for (auto& op : q.ops) out[op.name] = (*parsed)[op.builder_class];
      return out;
    }
  }
  const std::string answer = OPFORGE_TRY(ask_deepspeed(m, q, specs));
  auto parsed = OPFORGE_TRY(parse_deepspeed_compatibility(answer));
  for (auto& op : q.ops) {
    auto it = parsed.find(op.builder_class);
    if (it == parsed.end()) return failure("DeepSpeed's is_compatible() check gave no answer for " + op.name);
    out[op.name] = it->second;
  }
  cache.store(key, util::json_parse(answer));
  return out;
}

}  // namespace opforge::ops
