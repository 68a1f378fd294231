/// The nvcc wrapper's rule (compile/wrap/nvcc_args.h).
#include "compile/wrap/nvcc_args.h"

#include <algorithm>
#include <set>

#include "util/json.h"
#include "util/json_read.h"
#include "util/strings.h"

namespace opforge::compile {

namespace fs = std::filesystem;

namespace {

bool is_one_of(std::string_view a, std::initializer_list<std::string_view> names) {
  return std::find(names.begin(), names.end(), a) != names.end();
}

/// The value of `-opt=value` when `a` is one of `options` joined with '='.
std::optional<std::string_view> joined_value(std::string_view a, std::initializer_list<std::string_view> options) {
  for (auto o : options)
    if (a.size() > o.size() && a.starts_with(o) && a[o.size()] == '=') return a.substr(o.size() + 1);
  return std::nullopt;
}

/// A gencode option's GPU without its suffix: "90" for -gencode=arch=compute_90a,code=sm_90a.
std::string gencode_base(const std::string& g) {
  auto at = g.find("arch=compute_");
  if (at == std::string::npos) return {};
  std::string n;
  for (std::size_t i = at + 13; i < g.size() && std::isdigit(static_cast<unsigned char>(g[i])); ++i) n += g[i];
  return n;
}

std::string file_name(const std::string& path) {
  const auto slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

/// The plan's architectures in place of what the project asked for (`asked`), appended to `out`.
/// An arch-specific or family target (sm_90a, sm_100f) whose GPU is in the plan is kept: its
/// kernels (wgmma, TMA) exist only there, and compiled for the plain sm_90 they stop at the
/// project's own #error; the plan's own target for that GPU then gives way to it. The plan's other
/// targets come in when the project asked for any plain target. A compile that asked only for
/// targets of GPUs the plan lacks stops, naming the file.
std::string enforce(const std::string& asked, const std::vector<std::string>& gencode, const std::string& src,
                    std::vector<std::string>& out) {
  std::vector<std::string> bases, codes;
  for (const auto& g : gencode) {
    const std::string b = gencode_base(g);
    if (!b.empty() && std::find(bases.begin(), bases.end(), b) == bases.end()) bases.push_back(b);
    codes.push_back(g.substr(g.rfind('=') + 1));
  }
  std::string words = asked;
  for (char& c : words)
    if (c == ',' || c == '=' || c == '[' || c == ']') c = ' ';
  std::vector<std::string> kept;
  std::set<std::string> covered;
  std::string missing;
  bool plain = false;
  char opt = 0;
  std::string sub;
  for (const auto& piece : strings::split(words, ' ')) {
    const std::string t(piece);
    if (t.empty()) continue;
    if (is_one_of(t, {"-gencode", "--generate-code"})) opt = 'g', sub.clear();
    else if (is_one_of(t, {"-arch", "--gpu-architecture"})) opt = 'a', sub.clear();
    else if (is_one_of(t, {"-code", "--gpu-code"})) opt = 'c', sub.clear();
    else if (t == "arch" || t == "code") sub = t;
    else if (opt == 'g' && sub == "arch") continue;  // a -gencode's virtual architecture: its code= says what is built
    else if ((t.starts_with("sm_") || t.starts_with("compute_")) && t.size() > t.find('_') + 1 &&
             (t.back() == 'a' || t.back() == 'f')) {
      const std::string n = t.substr(t.find('_') + 1), b = n.substr(0, n.size() - 1);
      if (std::find(bases.begin(), bases.end(), b) != bases.end()) {
        covered.insert(b);
        std::vector<std::string> ks{t};
        if (opt == 'a' && t.starts_with("sm_")) ks.push_back("compute_" + n);
        for (const auto& k : ks)
          if (std::find(kept.begin(), kept.end(), k) == kept.end()) kept.push_back(k);
      } else {
        const std::string major = b.empty() ? b : b.substr(0, b.size() - 1);
        missing += " " + major + "." + b.substr(major.size()) + n.substr(b.size());
      }
    } else {
      plain = true;
    }
  }
  if (kept.empty() && !plain)
    return "opforge: " + (src.empty() ? std::string("this nvcc command") : src) + " asks nvcc only for" + asked +
           ", GPUs that [arch] list does not have (it compiles " + strings::join(codes, " ") + "): add" +
           (missing.empty() ? std::string(" its architecture") : missing) + " to [arch] list";
  for (const auto& t : kept) {
    const std::string n = t.substr(t.find('_') + 1);
    out.push_back(t.starts_with("sm_") ? "-gencode=arch=compute_" + n + ",code=sm_" + n
                                       : "-gencode=arch=compute_" + n + ",code=compute_" + n);
  }
  if (plain)
    for (const auto& g : gencode)
      if (!covered.contains(gencode_base(g))) out.push_back(g);
  return {};
}

}  // namespace

std::vector<std::string> rewrite_args(const std::vector<std::string>& args, const std::vector<ArgRewrite>& rewrites) {
  std::vector<std::string> out;
  out.reserve(args.size());
  for (const auto& a : args) {
    std::string arg = a;
    [&] {
      for (const auto& r : rewrites)
        for (std::string_view opt : {"-I", "-isystem", "-L", ""}) {
          if (opt == "-isystem" && !r.prefix) continue;
          const std::string from = std::string(opt) + r.from;
          if (a == from || (r.prefix && a.starts_with(from + "/"))) {
            arg = std::string(opt) + r.to + a.substr(from.size());
            return;
          }
        }
    }();
    out.push_back(std::move(arg));
  }
  return out;
}

NvccCall rewrite_nvcc(const std::vector<std::string>& in, const NvccRule& rule) {
  const bool launched = !rule.launcher.empty();
  const bool keep = rule.gencode.empty();  // [arch] enforce = false: the project's options stay
  const std::string host_dir = rule.host_dir.string();
  auto into_host_wrappers = [&](std::string_view dir) {
    return !host_dir.empty() && (dir == host_dir || dir.starts_with(host_dir + "/"));
  };
  NvccCall call;
  std::vector<std::string> args;
  std::string skip, out, ccbin, src;
  bool next = false, seeded = false, named = false, compile = false, has_ccbin = false;
  for (const auto& a : rewrite_args(in, rule.rewrites)) {
    if (next) {
      out = a, next = false;
      args.push_back(a);
      continue;
    }
    if (!skip.empty()) {  // an architecture option's value
      call.asked += " " + skip + " " + a;
      skip.clear();
      if (keep) args.push_back(a);
      continue;
    }
    if (launched && !ccbin.empty()) {  // -ccbin's value: a folder of the host wrappers gives way to rule.ccbin
      if (!into_host_wrappers(a)) {
        has_ccbin = true;
        args.push_back(ccbin);
        args.push_back(a);
      }
      ccbin.clear();
      continue;
    }
    if (is_one_of(a, {"-lineinfo", "--generate-line-info"})) continue;
    if (is_one_of(a, {"-o", "--output-file"})) {
      next = true;
    } else if (a == "-frandom-seed" || a.starts_with("-frandom-seed=")) {
      seeded = true;
    } else if (rule.stable_names &&
               (a.starts_with("-Xcicc=--orig_src_path_name") || a.starts_with("-Xcudafe=--orig_src_path_name"))) {
      named = true;
    } else if (launched && is_one_of(a, {"-c", "--compile"})) {
      compile = true;
    } else if (launched && is_one_of(a, {"-ccbin", "--compiler-bindir"})) {
      ccbin = a;
      continue;
    } else if (auto dir = launched ? joined_value(a, {"-ccbin", "--compiler-bindir"}) : std::nullopt) {
      if (into_host_wrappers(*dir)) continue;
      has_ccbin = true;
    } else if (is_one_of(a, {"-gencode", "--generate-code", "-arch", "--gpu-architecture", "-code", "--gpu-code"})) {
      skip = a;
      if (!keep) continue;
    } else if (joined_value(a, {"-gencode", "--generate-code", "-arch", "--gpu-architecture", "-code", "--gpu-code"})) {
      call.asked += " " + a;
      if (!keep) continue;
    } else if (!keep && a.ends_with(".cu")) {
      src = a;
    }
    args.push_back(a);
  }
  if (!skip.empty() && !keep) args.push_back(skip);  // an option without its value: nvcc says so
  if (!call.asked.empty() && !keep) {
    call.error = enforce(call.asked, rule.gencode, src, args);
    if (!call.error.empty()) return call;
  }
  if (rule.random_seed && !out.empty() && !seeded) args.push_back("-frandom-seed=" + file_name(out));
  if (rule.stable_names && !out.empty() && !named) {
    args.push_back("-Xcicc=--orig_src_path_name=" + file_name(out));
    args.push_back("-Xcudafe=--orig_src_path_name=" + file_name(out));
  }
  if (launched && !has_ccbin) {
    args.push_back("-ccbin");
    args.push_back(rule.ccbin.string());
  }
  if (launched && compile) call.argv.push_back(rule.launcher);
  call.argv.push_back(rule.nvcc.string());
  call.argv.insert(call.argv.end(), args.begin(), args.end());
  return call;
}

Result<nlohmann::json> rule_object(std::string_view text, std::string_view what, std::string_view key,
                                   std::string_view kind) {
  auto j = util::json_parse_checked(text);
  if (!j) return bad_input(std::string(what) + ": " + j.error().message, "delete it: opforge writes it again");
  const auto value = util::json_read::text(*j, key);
  if (!j->is_object() || !value || value->empty())
    return bad_input(
        std::string(what) + ": not " + std::string(kind) + " wrapper's rule (no \"" + std::string(key) + "\")",
        "delete it: opforge writes it again");
  return std::move(*j);
}

nlohmann::json rewrites_json(const std::vector<ArgRewrite>& rewrites) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& r : rewrites) out.push_back({{"from", r.from}, {"to", r.to}, {"prefix", r.prefix}});
  return out;
}

std::vector<ArgRewrite> rule_rewrites(const nlohmann::json& rule) {
  namespace jr = util::json_read;
  std::vector<ArgRewrite> out;
  if (const auto* rewrites = jr::array(rule, "rewrites"))
    for (const auto& r : *rewrites)
      out.push_back({jr::text_or(r, "from"), jr::text_or(r, "to"), jr::flag(r, "prefix").value_or(true)});
  return out;
}

std::string rule_json(const NvccRule& rule) {
  const nlohmann::json j = {{"nvcc", rule.nvcc.string()},         {"gencode", rule.gencode},
                            {"random_seed", rule.random_seed},    {"stable_names", rule.stable_names},
                            {"launcher", rule.launcher},          {"ccbin", rule.ccbin.string()},
                            {"host_dir", rule.host_dir.string()}, {"rewrites", rewrites_json(rule.rewrites)}};
  return util::json_dump(j, 1) + "\n";
}

Result<NvccRule> parse_rule_json(std::string_view text, std::string_view what) {
  namespace jr = util::json_read;
  const auto j = OPFORGE_TRY(rule_object(text, what, "nvcc", "an nvcc"));
  NvccRule rule;
  rule.nvcc = jr::text_or(j, "nvcc");
  rule.gencode = jr::texts(j, "gencode");
  rule.random_seed = jr::flag(j, "random_seed").value_or(false);
  rule.stable_names = jr::flag(j, "stable_names").value_or(false);
  rule.launcher = jr::text_or(j, "launcher");
  rule.ccbin = jr::text_or(j, "ccbin");
  rule.host_dir = jr::text_or(j, "host_dir");
  rule.rewrites = rule_rewrites(j);
  return rule;
}

namespace {

bool names_host_compiler(std::string_view a) {
  return a == "-ccbin" || a == "--compiler-bindir" || a.starts_with("-ccbin=") || a.starts_with("--compiler-bindir=");
}

}  // namespace

std::optional<std::string> prepend_flags_for(std::string_view prepend, const std::vector<std::string>& argv) {
  if (std::none_of(argv.begin(), argv.end(), [](const std::string& a) { return names_host_compiler(a); }))
    return std::nullopt;
  std::vector<std::string> words;
  for (auto& w : strings::split(prepend, ' '))
    if (!w.empty()) words.push_back(w);
  std::vector<std::string> kept;
  bool dropped = false;
  for (std::size_t i = 0; i < words.size(); ++i) {
    if (!names_host_compiler(words[i])) {
      kept.push_back(words[i]);
      continue;
    }
    dropped = true;
    if (words[i].find('=') == std::string::npos) ++i;  // its value
  }
  if (!dropped) return std::nullopt;
  return strings::join(kept, " ");
}

}  // namespace opforge::compile
