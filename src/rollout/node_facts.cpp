// One node's `opforge doctor --json` report, read for `verify --nodes`: every field checked for
// its type (a report is untrusted text), what cannot be read left unknown with the reason.
#include "devices/nodes.h"
#include "doctor/node.h"
#include "rollout/rollout.h"
#include "target/x86.h"
#include "util/json.h"
#include "util/json_read.h"
#include "util/numbers.h"
#include "util/strings.h"

namespace opforge::rollout {
namespace {

namespace jr = util::json_read;
using json = nlohmann::json;

/// "3.11" → (3, 11).
std::optional<std::pair<int, int>> major_minor(std::string_view text) {
  auto dot = text.find('.');
  if (dot == std::string_view::npos) return std::nullopt;
  auto major = numbers::parse_int<int>(text.substr(0, dot)), minor = numbers::parse_int<int>(text.substr(dot + 1));
  if (!major || !minor || *major < 0 || *minor < 0 || *major > 999 || *minor > 999) return std::nullopt;
  return std::pair{*major, *minor};
}

}  // namespace

NodeFacts parse_node_facts(const fs::path& report, std::string_view text) {
  NodeFacts n;
  n.report = report;
  n.name = report.filename().string();
  const json j = util::json_parse(text);
  if (j.is_discarded() || !j.is_object()) {
    n.unreadable = "not a JSON object (give the output of `opforge doctor --json`)";
    return n;
  }
  const json* node = jr::object(j, "node");
  if (node) {
    if (auto host = jr::text(*node, "host"); host && !host->empty()) n.name = strings::cut(*host, 64);
    auto format = jr::integer(*node, "format");
    if (format && *format > doctor::kNodeFormat) {
      n.unreadable = "written by a newer opforge (node format " + std::to_string(*format) + "; this one reads " +
                     std::to_string(doctor::kNodeFormat) + "): check it with that opforge";
      return n;
    }
  }
  const std::string older =
      "the report has no \"node\" part (an older opforge wrote it): run `opforge doctor "
      "--json` there again";
  auto unknown = [&](const std::string& field, const std::string& why) { n.unknown_why[field] = why; };
  auto node_text = [&](const char* key) -> std::optional<std::string> {
    if (!node) return unknown(key, older), std::nullopt;
    const json* v = jr::member(*node, key);
    if (v && v->is_null()) return std::string();
    if (!v || !v->is_string())
      return unknown(key, std::string("node.") + key + " is missing or not a string"), std::nullopt;
    return v->get<std::string>();
  };
  // GPUs: what `plan --nodes` reads, with its errors.
  if (auto gpus = devices::parse_node_report(report, text)) n.gpus = gpus->gpus;
  else unknown("gpus", gpus.error().message);
  if (const json* g = jr::object(j, "gpus")) n.gpu_reader = strings::cut(jr::text_or(*g, "reader"), 200);
  if (auto machine = node_text("machine"); machine && !machine->empty()) n.machine = *machine;
  else if (machine) unknown("machine", "node.machine is empty");
  if (auto glibc = node_text("glibc")) {
    auto mm = major_minor(*glibc);
    if (mm && mm->first == 2) n.glibc_minor = mm->second;
    else
      unknown("glibc", glibc->empty() ? "the node's glibc was not found"
                                      : "node.glibc \"" + strings::cut(*glibc, 40) + "\" is not 2.X");
  }
  if (auto v = node_text("glibcxx")) n.glibcxx = *v;
  if (auto v = node_text("cxxabi")) n.cxxabi = *v;
  if (auto level = node_text("cpu_level")) {
    for (int l = 1; l <= 4; ++l)
      if (*level == target::level_name(l)) n.cpu_level = l;
    if (!n.cpu_level)
      unknown("cpu_level", level->empty() ? "the node's CPU level was not read"
                                          : "node.cpu_level \"" + strings::cut(*level, 40) + "\" is not x86-64[-vN]");
  }
  if (auto py = node_text("python")) {
    if (auto mm = major_minor(*py)) n.python = mm;
    else
      unknown("python", py->empty() ? "the report's Python could not be run"
                                    : "node.python \"" + strings::cut(*py, 40) + "\" is not X.Y");
  }
  if (!node) {
    unknown("driver", older);
  } else if (const json* d = jr::member(*node, "driver"); d && d->is_null()) {
    n.driver = "";
  } else if (d && d->is_object() && jr::text(*d, "version")) {
    n.driver = strings::cut(*jr::text(*d, "version"), 40);
    if (auto c = jr::text(*d, "cuda")) n.driver_cuda = parse_version(*c);
  } else {
    unknown("driver", "node.driver is missing or not an object");
  }
  // torch: {"version": ...} when installed, a status otherwise.
  if (const json* t = jr::object(j, "torch")) {
    if (auto v = jr::text(*t, "version")) n.torch = strings::cut(*v, 60);
    else if (jr::text_or(*t, "status") == "torch not installed") n.torch = "";
    else
      unknown("torch", "the report's Python could not be asked (" + strings::cut(jr::text_or(*t, "status"), 80) + ")");
  } else {
    unknown("torch", "the report has no \"torch\" part");
  }
  return n;
}

}  // namespace opforge::rollout
