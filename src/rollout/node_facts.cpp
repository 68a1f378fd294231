// One node's `opforge doctor --json` report, read for `verify --nodes`: every field checked for
// its type (a report is untrusted text), what cannot be read left unknown with the reason.
#include "devices/nodes.h"
#include "doctor/node.h"
#include "rollout/rollout.h"
#include "target/x86.h"
#include "util/json.h"
#include "util/json_read.h"
#include "util/numbers.h"
#include "util/pep440.h"
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
  auto parsed = util::json_parse_checked(text);
  if (!parsed) {
    n.unreadable = parsed.error().message + " (give the output of `opforge doctor --json`)";
    return n;
  }
  const json& j = *parsed;
  if (!j.is_object()) {
    n.unreadable = "not a JSON object (give the output of `opforge doctor --json`)";
    return n;
  }
  const json* node = jr::object(j, "node");
  if (node) {
    if (auto host = jr::text(*node, "host"); host && !host->empty()) n.name = strings::cut(*host, 64);
    // Checked, never guessed: a format that is not the plain integer this opforge writes (2.0, "2",
    // 2^63) is a report it cannot vouch for, and its row must not pass.
    if (auto format = jr::format_number(*node, "format", doctor::kNodeFormat); !format) {
      n.unreadable = "node." + format.error().message + ": " +
                     (format.error().hint.empty() ? "give the output of `opforge doctor --json`"
                                                  : "check it with the opforge that wrote it");
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
  } else if (d && d->is_object() && (jr::text(*d, "version") || jr::text(*d, "cuda"))) {
    if (auto v = jr::text(*d, "version")) n.driver = strings::cut(*v, 40);
    else unknown("driver", "the report has the CUDA the driver supports, not its version");
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

namespace {

/// The nodes of a node check's report: one per host, from the facts of that host's ranks.
std::vector<NodeFacts> nodecheck_nodes(const fs::path& report, const json& j) {
  const std::string schema = jr::text_or(j, "schema");
  auto whole = [&](const std::string& why) {
    NodeFacts n;
    n.report = report;
    n.name = report.filename().string();
    n.unreadable = why;
    return std::vector<NodeFacts>{n};
  };
  if (schema != "opforge-nodecheck/1")
    return whole("a node check report of schema \"" + strings::cut(schema, 40) +
                 "\", which this opforge does not read (it reads opforge-nodecheck/1)");
  const json* ranks = jr::array(j, "ranks");
  if (!ranks || ranks->empty())
    return whole("the node check stopped before it gathered the ranks' facts (" +
                 strings::cut(jr::text_or(j, "failed_step", "no ranks"), 80) + "): run it again");
  std::map<std::string, NodeFacts> hosts;
  std::vector<std::string> order;
  const std::string older =
      "the node check report has no runtime facts (an older opforge_ops wrote it): run "
      "the node check again with this wheel's version, or give `opforge doctor --json`";
  for (const auto& r : *ranks) {
    if (!r.is_object()) continue;
    const std::string host = strings::cut(jr::text_or(r, "host", "?"), 64);
    auto [it, fresh] = hosts.try_emplace(host);
    NodeFacts& n = it->second;
    if (fresh) {
      order.push_back(host);
      n.report = report;
      n.name = host;
      n.gpus = std::vector<devices::Gpu>{};
      n.gpu_reader = "the node check's ranks";
      auto text = [&](const char* key) { return jr::text(r, key); };
      if (const json* d = jr::member(r, "driver"); d && d->is_null()) n.driver = "";
      else if (auto v = text("driver")) n.driver = strings::cut(*v, 40);
      else n.unknown_why["driver"] = "ranks[].driver is not a string";
      if (auto c = text("driver_cuda")) n.driver_cuda = parse_version(*c);
      if (auto py = text("python")) {
        if (auto p = pep440::release_of(*py); p && p->size() >= 2) n.python = std::pair{(*p)[0], (*p)[1]};
      }
      if (!n.python) n.unknown_why["python"] = "ranks[].python is missing or not X.Y.Z";
      if (auto t = text("torch")) n.torch = strings::cut(*t, 60);
      else n.unknown_why["torch"] = "ranks[].torch is missing";
      if (!jr::member(r, "machine")) {
        for (const char* key : {"machine", "glibc", "glibcxx", "cxxabi", "cpu_level"}) n.unknown_why[key] = older;
      } else {
        if (auto m = text("machine"); m && !m->empty()) n.machine = *m;
        else n.unknown_why["machine"] = "ranks[].machine is not a string";
        if (auto g = text("glibc"))
          if (auto mm = major_minor(*g); mm && mm->first == 2) n.glibc_minor = mm->second;
        if (!n.glibc_minor) n.unknown_why["glibc"] = "ranks[].glibc is not 2.X";
        // null: the process had no libstdc++ loaded, which says nothing of the node's.
        if (auto v = text("glibcxx")) n.glibcxx = *v;
        else n.unknown_why["glibcxx"] = "the node check's process had no libstdc++ loaded";
        if (auto v = text("cxxabi")) n.cxxabi = *v;
        else n.unknown_why["cxxabi"] = "the node check's process had no libstdc++ loaded";
        if (auto level = text("cpu_level"))
          for (int l = 1; l <= 4; ++l)
            if (*level == target::level_name(l)) n.cpu_level = l;
        if (!n.cpu_level) n.unknown_why["cpu_level"] = "ranks[].cpu_level is not x86-64[-vN]";
      }
    }
    if (const json* g = jr::object(r, "gpu")) {
      devices::Gpu gpu;
      gpu.index = static_cast<int>(jr::count(*g, "index").value_or(0) & 0xffff);
      gpu.name = strings::cut(jr::text_or(*g, "name", "GPU"), 60);
      const auto cap = jr::text_or(*g, "capability");
      const auto mm = major_minor(cap);
      if (!mm || mm->first <= 0 || mm->first > 99 || mm->second > 99) {
        n.unknown_why["gpus"] = "rank " + std::to_string(jr::count(r, "rank").value_or(0)) + ": capability \"" +
                                strings::cut(cap, 20) + "\" is not MAJOR.MINOR";
        n.gpus.reset();
        continue;
      }
      gpu.major = mm->first;
      gpu.minor = mm->second;
      if (n.gpus) n.gpus->push_back(gpu);
    }
  }
  std::vector<NodeFacts> out;
  for (const auto& h : order) out.push_back(std::move(hosts[h]));
  if (out.empty()) return whole("the node check report lists no rank");
  return out;
}

}  // namespace

std::vector<NodeFacts> parse_node_reports(const fs::path& report, std::string_view text) {
  const json j = util::json_parse(text);
  if (j.is_object() && j.contains("schema") && j.contains("ranks")) return nodecheck_nodes(report, j);
  return {parse_node_facts(report, text)};
}

Result<std::vector<NodeFacts>> read_node_reports(const probe::FileSystem& fs, const std::vector<std::string>& reports) {
  std::vector<NodeFacts> out;
  for (const auto& report : reports) {
    auto text = fs.read_file(report, 16ull << 20);
    if (!text)
      return bad_input("cannot read the node report " + report + ": " + text.error().message,
                       "run `opforge doctor --json > NODE.json` on each node and pass those files");
    for (auto& node : parse_node_reports(report, *text)) out.push_back(std::move(node));
  }
  return out;
}

}  // namespace opforge::rollout
