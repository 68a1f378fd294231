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
  const nlohmann::json j = {{"compiler", rule.compiler.string()},
                            {"gc_param", rule.gc_param},
                            {"launcher", rule.launcher},
                            {"rewrites", rewrites_json(rule.rewrites)},
                            {"pch_dir", rule.pch_dir.string()}};
  return util::json_dump(j, 1) + "\n";
}

Result<HostRule> parse_host_rule_json(std::string_view text, std::string_view what) {
  namespace jr = util::json_read;
  const auto j = OPFORGE_TRY(rule_object(text, what, "compiler", "a host"));
  HostRule rule;
  rule.compiler = jr::text_or(j, "compiler");
  rule.gc_param = jr::text_or(j, "gc_param");
  rule.launcher = jr::text_or(j, "launcher");
  rule.pch_dir = jr::text_or(j, "pch_dir");
  rule.rewrites = rule_rewrites(j);
  return rule;
}

}  // namespace opforge::compile
