#include "ops/deepspeed.h"
#include "ops/cache.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "util/hash.h"
#include "util/strings.h"

namespace opforge::ops {
namespace {

// One script, two modes. `catalogue ROOT`: op_builder/ read with `ast` (no import, so no torch),
// the classes the CUDA accelerator registers — DeepSpeed's accelerator/cuda_accelerator.py takes
// every *Builder class of the top-level modules except OpBuilder/CUDAOpBuilder, then the host-side
// optimizers CPUAdamBuilder, CPUAdagradBuilder, CPULionBuilder from op_builder/cpu. `compat ROOT
// module:Class...`: imports each builder as setup.py does (ROOT first on sys.path) and asks
// is_compatible(verbose=True); the text DeepSpeed prints is the reason. stdout carries only JSON
// (everything else printed goes to stderr).
constexpr const char* kScript = R"PY(
import ast, json, os, sys
from typing import Any, Dict, List, Optional

CPU_HOST_OPTIMIZERS = ["CPUAdamBuilder", "CPUAdagradBuilder", "CPULionBuilder"]
ABSTRACT = {"OpBuilder", "CUDAOpBuilder"}


def base_name(node: ast.expr) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return ""


def read_module(path: str, module: str, classes: Dict[str, Dict[str, Any]]) -> List[str]:
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read(), filename=path)
    names = []
    for node in tree.body:
        if not isinstance(node, ast.ClassDef):
            continue
        info: Dict[str, Any] = {"module": module, "bases": [base_name(b) for b in node.bases],
                                "attrs": {}, "methods": {}}
        for item in node.body:
            if isinstance(item, ast.Assign) and len(item.targets) == 1 and isinstance(item.targets[0], ast.Name):
                if isinstance(item.value, ast.Constant) and isinstance(item.value.value, str):
                    info["attrs"][item.targets[0].id] = item.value.value
            elif isinstance(item, ast.FunctionDef):
                info["methods"][item.name] = item
        classes.setdefault(node.name, info)
        classes[node.name + "@" + module] = info
        names.append(node.name)
    return names


def lookup(classes: Dict[str, Dict[str, Any]], name: str, what: str, key: str) -> Any:
    seen = set()
    todo = [name]
    while todo:
        n = todo.pop(0)
        if n in seen or n not in classes:
            continue
        seen.add(n)
        c = classes[n]
        if key in c[what]:
            return c[what][key]
        todo.extend(c["bases"])
    return None


def derives(classes: Dict[str, Dict[str, Any]], name: str, base: str) -> bool:
    seen = set()
    todo = list(classes.get(name, {}).get("bases", []))
    while todo:
        n = todo.pop()
        if n == base:
            return True
        if n in seen:
            continue
        seen.add(n)
        todo.extend(classes.get(n, {}).get("bases", []))
    return False


def literal_list(classes: Dict[str, Dict[str, Any]], cls: str, expr: Optional[ast.expr], depth: int = 0) -> Optional[List[str]]:
    if expr is None or depth > 8:
        return None
    if isinstance(expr, (ast.List, ast.Tuple)):
        out = []
        for e in expr.elts:
            if not (isinstance(e, ast.Constant) and isinstance(e.value, str)):
                return None
            out.append(e.value)
        return out
    if isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.Add):
        a = literal_list(classes, cls, expr.left, depth + 1)
        b = literal_list(classes, cls, expr.right, depth + 1)
        return None if a is None or b is None else a + b
    if (isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute) and not expr.args
            and isinstance(expr.func.value, ast.Name) and expr.func.value.id == "self"):
        return method_list(classes, cls, expr.func.attr, depth + 1)
    return None


def method_list(classes: Dict[str, Dict[str, Any]], cls: str, method: str, depth: int = 0) -> Optional[List[str]]:
    fn = lookup(classes, cls, "methods", method)
    if fn is None:
        return None
    returns = [n for n in ast.walk(fn) if isinstance(n, ast.Return)]
    if len(returns) != 1:
        return None
    return literal_list(classes, cls, returns[0].value, depth)


def source_strings(classes: Dict[str, Dict[str, Any]], cls: str) -> List[str]:
    out: List[str] = []
    seen = set()
    todo = [cls]
    while todo:
        n = todo.pop()
        if n in seen or n not in classes or n in ABSTRACT:
            continue
        seen.add(n)
        for name, fn in classes[n]["methods"].items():
            if "sources" in name:
                out += [c.value for c in ast.walk(fn) if isinstance(c, ast.Constant) and isinstance(c.value, str)]
        todo.extend(classes[n]["bases"])
    return out


def catalogue(root: str) -> Dict[str, Any]:
    ob = os.path.join(root, "op_builder")
    classes: Dict[str, Dict[str, Any]] = {}
    found: List[tuple] = []
    for helper in ("builder.py", os.path.join("cpu", "builder.py")):
        p = os.path.join(ob, helper)
        if os.path.isfile(p):
            read_module(p, "op_builder." + helper[:-3].replace(os.sep, "."), classes)
    for f in sorted(os.listdir(ob)):
        p = os.path.join(ob, f)
        if not f.endswith(".py") or f in ("__init__.py", "all_ops.py", "builder.py") or not os.path.isfile(p):
            continue
        module = "op_builder." + f[:-3]
        for n in read_module(p, module, classes):
            found.append((n, module))
    cpu = os.path.join(ob, "cpu")
    cpu_found: Dict[str, str] = {}
    if os.path.isdir(cpu):
        for f in sorted(os.listdir(cpu)):
            if f.endswith(".py") and f not in ("__init__.py", "builder.py"):
                module = "op_builder.cpu." + f[:-3]
                sub: Dict[str, Dict[str, Any]] = {}
                for n in read_module(os.path.join(cpu, f), module, sub):
                    if n in CPU_HOST_OPTIMIZERS:
                        cpu_found[n] = module
                        classes[n] = sub[n]
    ops: Dict[str, Dict[str, Any]] = {}
    order = [(n, m) for n, m in found if n not in cpu_found] + sorted(cpu_found.items())
    for n, module in order:
        if not n.endswith("Builder") or n in ABSTRACT:
            continue
        info = classes.get(n + "@" + module) or classes.get(n)
        if info is None or info["module"] != module:
            continue  # imported into this module, defined elsewhere
        name = lookup(classes, n, "attrs", "NAME")
        var = lookup(classes, n, "attrs", "BUILD_VAR")
        if not name or not var:
            continue
        sources = method_list(classes, n, "sources")
        # Sources computed at run time: every string in the *sources methods still names the files.
        strings = sources if sources is not None else source_strings(classes, n)
        cuda_sources = any(s.endswith((".cu", ".cuh")) for s in strings)
        kind = "cuda" if cuda_sources else ("cpu_cuda" if derives(classes, n, "CUDAOpBuilder") else "cpu")
        if name in ops:
            continue
        ops[name] = {"name": name, "build_var": var, "class": module + ":" + n,
                     "sources": sources, "kind": kind}
    return {"ops": [ops[k] for k in sorted(ops)]}


def compat(root: str, wanted: List[str]) -> Dict[str, Any]:
    import contextlib, importlib, io
    sys.path.insert(0, root)
    os.chdir(root)
    out: Dict[str, Any] = {}
    for spec in wanted:
        module, cls = spec.split(":")
        text = io.StringIO()
        try:
            with contextlib.redirect_stdout(text):
                builder = getattr(importlib.import_module(module), cls)()
                ok = bool(builder.is_compatible(verbose=True))
            reason = (getattr(builder, "error_log", None) or "").strip()
        except BaseException as e:  # a builder that cannot even be asked is not compatible
            ok, reason = False, "%s.is_compatible() raised %s: %s" % (cls, type(e).__name__, e)
        printed = [l.strip() for l in text.getvalue().splitlines() if "WARNING" in l or "ERROR" in l]
        if not ok and not reason:
            reason = "; ".join(printed) or cls + ".is_compatible() returned False"
        sys.stderr.write(text.getvalue())
        out[spec] = {"ok": ok, "reason": reason}
    return out


def main() -> None:
    mode, root = sys.argv[1], sys.argv[2]
    stdout = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)  # compilers and prints of the project go to stderr
    result = catalogue(root) if mode == "catalogue" else compat(root, sys.argv[3:])
    stdout.write(json.dumps(result) + "\n")
    stdout.flush()


main()
)PY";

std::string tail(const std::string& text, std::size_t n) {
  return text.size() <= n ? text : "…" + text.substr(text.size() - n);
}

}  // namespace

bool has_op_builder(const probe::FileSystem& fs, const fs::path& root) {
  return fs.resolved_type(root / "op_builder" / "builder.py") == probe::FileType::regular;
}

Result<std::vector<Manifest>> parse_deepspeed_catalogue(const fs::path& root, std::string_view text) {
  auto j = nlohmann::json::parse(text, nullptr, false);
  if (!j.is_object() || !j.contains("ops") || !j["ops"].is_array())
    return failure("cannot read the op_builder catalogue of " + root.string() + ": " + tail(std::string(text), 300));
  std::vector<Manifest> out;
  for (auto& o : j["ops"]) {
    if (!o.is_object() || !o.value("name", nlohmann::json()).is_string()) continue;
    Manifest m;
    m.name = o["name"].get<std::string>();
    m.build_var = o.value("build_var", std::string());
    m.builder_class = o.value("class", std::string());
    std::string kind = o.value("kind", std::string("cpu"));
    m.kind = kind == "cuda" ? Kind::cuda : kind == "cpu_cuda" ? Kind::cpu_cuda : Kind::cpu;
    m.dir = root;
    if (o.contains("sources") && o["sources"].is_array())
      for (auto& s : o["sources"])
        if (s.is_string()) m.sources.emplace_back(s.get<std::string>());
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
  probe::Command cmd;
  cmd.argv = {python, "-c", kScript, "catalogue", root.string()};
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
  auto j = nlohmann::json::parse(text, nullptr, false);
  if (!j.is_object())
    return failure("cannot read the answer of DeepSpeed's is_compatible(): " + tail(std::string(text), 300));
  std::map<std::string, Compatibility> out;
  for (auto& [spec, v] : j.items()) {
    if (!v.is_object()) continue;
    out[spec] = {v.value("ok", false), v.value("reason", std::string())};
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

/// What builders' is_compatible() read: DS_*, CUDA_*, CUTLASS_* (evoformer_attn), TORCH_*, and the
/// compiler and library search variables (async_io's libaio probe).
bool compatibility_reads(const std::string& k) {
  return k.starts_with("DS_") || k.starts_with("CUDA") || k.starts_with("CUTLASS") || k.starts_with("TORCH") ||
         k == "PATH" || k == "CC" || k == "CXX" || k == "CFLAGS" || k == "LDFLAGS" || k == "PYTHONPATH" ||
         k == "LD_LIBRARY_PATH" || k == "LIBRARY_PATH" || k == "CPATH";
}

/// The key: op_builder/'s files, the Python binary, torch's identity, what compatibility reads.
std::string compatibility_key(probe::Machine m, const CompatibilityQuery& q, const std::vector<std::string>& specs) {
  std::string text = op_builder_digest(m, q.root);
  const fs::path py = locate_program(m, q.python).real;
  if (auto st = m.fs.stamp(py))
    text += py.string() + ":" + std::to_string(st->size) + ":" + std::to_string(st->mtime_ns) + "\n";
  for (auto& [k, v] : q.env)
    if (compatibility_reads(k)) text += k + "=" + v + "\n";
  text += "torch=" + q.torch_identity + "\n";
  text += strings::join(specs, "\n");
  return sha256_hex(text);
}

/// Runs is_compatible() of each builder class in `specs` with the project's Python.
Result<std::string> ask_deepspeed(probe::Machine m, const CompatibilityQuery& q,
                                  const std::vector<std::string>& specs) {
  probe::Command cmd;
  cmd.argv = {q.python, "-c", kScript, "compat", q.root.string()};
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
  cache.store(key, nlohmann::json::parse(answer, nullptr, false));
  return out;
}

}  // namespace opforge::ops
