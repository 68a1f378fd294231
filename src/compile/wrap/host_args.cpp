/// The host wrappers' rule (compile/wrap/host_args.h).
#include "compile/wrap/host_args.h"

#include <algorithm>

#include "util/json.h"
#include "util/json_read.h"

namespace opforge::compile {

HostCall rewrite_host(const std::vector<std::string>& in, const HostRule& rule) {
  HostCall call;
  call.args = rewrite_args(in, rule.rewrites);
  call.compile = std::find(call.args.begin(), call.args.end(), "-c") != call.args.end();
  if (call.compile && !rule.launcher.empty()) call.argv.push_back(rule.launcher);
  call.argv.push_back(rule.compiler.string());
  if (call.compile && !rule.gc_param.empty()) call.args.push_back(rule.gc_param);
  call.argv.insert(call.argv.end(), call.args.begin(), call.args.end());
  // -g0 last: it overrides any -g before it; the stripped library is the same bytes either way.
  if (call.compile) call.argv.push_back("-g0");
  return call;
}

std::string host_rule_json(const HostRule& rule) {
  nlohmann::json rewrites = nlohmann::json::array();
  for (const auto& r : rule.rewrites) rewrites.push_back({{"from", r.from}, {"to", r.to}, {"prefix", r.prefix}});
  const nlohmann::json j = {{"compiler", rule.compiler.string()},
                            {"gc_param", rule.gc_param},
                            {"launcher", rule.launcher},
                            {"rewrites", rewrites},
                            {"pch_dir", rule.pch_dir.string()}};
  return util::json_dump(j, 1) + "\n";
}

Result<HostRule> parse_host_rule_json(std::string_view text, std::string_view what) {
  namespace jr = util::json_read;
  auto j = util::json_parse_checked(text);
  if (!j) return bad_input(std::string(what) + ": " + j.error().message, "delete it: opforge writes it again");
  auto compiler = jr::text(*j, "compiler");
  if (!j->is_object() || !compiler || compiler->empty())
    return bad_input(std::string(what) + ": not a host wrapper's rule (no \"compiler\")",
                     "delete it: opforge writes it again");
  HostRule rule;
  rule.compiler = *compiler;
  rule.gc_param = jr::text_or(*j, "gc_param");
  rule.launcher = jr::text_or(*j, "launcher");
  rule.pch_dir = jr::text_or(*j, "pch_dir");
  if (const auto* rewrites = jr::array(*j, "rewrites"))
    for (const auto& r : *rewrites)
      rule.rewrites.push_back({jr::text_or(r, "from"), jr::text_or(r, "to"), jr::flag(r, "prefix").value_or(true)});
  return rule;
}

}  // namespace opforge::compile
