#include "pipeline/wheelhouse.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include <nlohmann/json.hpp>

#include "pipeline/dist.h"
#include "record/record.h"
#include "util/hash.h"
#include "util/json.h"
#include "util/json_read.h"
#include "util/strings.h"
#include "wheel/index.h"
#include "wheel/wheel.h"

namespace opforge::pipeline {

namespace {

using Json = nlohmann::json;

void sort_rows(std::vector<SummaryRow>& rows) {
  std::sort(rows.begin(), rows.end(),
            [](auto& a, auto& b) { return std::tie(a.cell, a.wheel) < std::tie(b.cell, b.wheel); });
}

std::string seconds_text(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", s);
  return buf;
}

/// Table cells cannot hold '|' or a line break.
std::string cell_text(std::string_view s) {
  std::string out;
  for (char c : s) out += (c == '|' ? '/' : (c == '\n' ? ' ' : c));
  return out;
}

/// One row per wheel file (its name carries project, version and tags): `row` replaces the row of
/// the same wheel only. Cells are not keys: every build without [matrix] is cell "default", so two
/// projects in one wheelhouse would otherwise share a row; a cell's older wheel keeps its row while
/// it is still served, and loses it (rewrite) when it is gone.
void merge_row(std::vector<SummaryRow>& rows, const SummaryRow& row) {
  std::erase_if(rows, [&](auto& r) { return r.wheel == row.wheel; });
  rows.push_back(row);
}

Status rewrite(probe::FileSystem& fs, const fs::path& dist, std::vector<SummaryRow> rows) {
  std::erase_if(rows, [&](auto& r) { return fs.type_of(dist / r.wheel) != probe::FileType::regular; });
  OPFORGE_CHECK(wheel::write_simple_index(fs, dist));
  OPFORGE_CHECK(fs.write_file_atomic(dist / "summary.json", summary_json(rows)));
  return fs.write_file_atomic(dist / "SUMMARY.md", summary_markdown(rows));
}

}  // namespace

std::string summary_json(std::vector<SummaryRow> rows) {
  sort_rows(rows);
  Json arr = Json::array();
  for (auto& r : rows)
    arr.push_back({{"cell", r.cell},
                   {"wheel", r.wheel},
                   {"sha256", r.sha256},
                   {"ops", r.ops},
                   {"toolkit", r.toolkit},
                   {"torch", r.torch},
                   {"seconds", std::round(r.seconds * 10) / 10}});
  return util::json_dump(Json{{"wheels", arr}}, 2) + "\n";
}

std::string summary_markdown(std::vector<SummaryRow> rows) {
  sort_rows(rows);
  std::string md =
      "# Wheels\n\n| cell | wheel | sha256 | ops | toolkit | torch | seconds |\n"
      "|---|---|---|---|---|---|---:|\n";
  for (auto& r : rows)
    md += "| " + cell_text(r.cell) + " | " + cell_text(r.wheel) + " | `" + r.sha256.substr(0, 16) + "` | " +
          cell_text(r.ops.empty() ? "-" : strings::join(r.ops, ", ")) + " | " +
          cell_text(r.toolkit.empty() ? "-" : r.toolkit) + " | " + cell_text(r.torch.empty() ? "-" : r.torch) + " | " +
          seconds_text(r.seconds) + " |\n";
  if (rows.empty()) md += "| - | - | - | - | - | - | - |\n";
  return md;
}

std::vector<SummaryRow> read_summary(const probe::FileSystem& fs, const fs::path& dir) {
  std::vector<SummaryRow> rows;
  auto text = fs.read_file(dir / "summary.json");
  if (!text) return rows;
  namespace jr = util::json_read;
  auto j = util::json_parse(*text);
  const Json* wheels = jr::array(j, "wheels");
  if (!wheels) return rows;
  for (auto& w : *wheels) {
    if (!w.is_object()) continue;
    SummaryRow r{jr::text_or(w, "cell"),
                 jr::text_or(w, "wheel"),
                 jr::text_or(w, "sha256"),
                 jr::texts(w, "ops"),
                 jr::text_or(w, "toolkit"),
                 jr::text_or(w, "torch"),
                 jr::number(w, "seconds").value_or(0)};
    // A row naming a path instead of a file in this folder is not one of ours.
    if (!r.wheel.empty() && r.wheel.find('/') == std::string::npos) rows.push_back(std::move(r));
  }
  return rows;
}

Status land(probe::FileSystem& fs, const fs::path& dist, const SummaryRow& row) {
  auto rows = read_summary(fs, dist);
  merge_row(rows, row);
  return rewrite(fs, dist, std::move(rows));
}

Result<MergeReport> merge_wheelhouse(probe::Machine m, const fs::path& out, const std::vector<fs::path>& inputs,
                                     const std::function<void(std::string_view)>& on_wait) {
  struct Incoming {
    fs::path from;
    std::string name, bytes, sha256;
    std::optional<std::string> record;
  };
  std::vector<Incoming> incoming;
  std::vector<SummaryRow> rows;
  std::vector<std::string> problems;
  for (auto& dir : inputs) {
    if (m.fs.resolved_type(dir) != probe::FileType::directory)
      return bad_input(dir.string() + ": no such folder", "name folders that hold built wheels (a job's dist/)");
    for (auto& n : OPFORGE_TRY(m.fs.list_directory(dir))) {
      if (n.starts_with(".") || !n.ends_with(".whl")) continue;
      Incoming in{dir / n, n, {}, {}, {}};
      auto report = OPFORGE_TRY(wheel::verify(m.fs, in.from));
      for (auto& p : report.problems) problems.push_back(in.from.string() + ": " + p);
      if (!report.ok()) continue;
      in.bytes = OPFORGE_TRY(m.fs.read_file(in.from, wheel::Limits{}.archive_bytes));
      in.sha256 = sha256_hex(in.bytes);
      if (auto rec_text = m.fs.read_file(record::path_for(in.from))) {
        auto rec = record::load(m.fs, record::path_for(in.from));
        if (!rec || !rec->outputs.contains(n) || rec->outputs.at(n) != in.sha256) {
          problems.push_back(in.from.string() + ": its build record " + record::path_for(in.from).string() +
                             " does not describe these bytes");
          continue;
        }
        in.record = *rec_text;
      }
      for (auto& r : read_summary(m.fs, dir))
        if (r.wheel == n && r.sha256 == in.sha256) rows.push_back(r);
      incoming.push_back(std::move(in));
    }
  }
  // Two different wheels of one name cannot both be served.
  for (std::size_t i = 0; i < incoming.size(); ++i)
    for (std::size_t k = i + 1; k < incoming.size(); ++k)
      if (incoming[i].name == incoming[k].name && incoming[i].sha256 != incoming[k].sha256)
        problems.push_back(incoming[i].from.string() + " and " + incoming[k].from.string() +
                           " are different wheels with one name");
  if (!problems.empty())
    return bad_input(
        "not merged, " + std::to_string(problems.size()) + " problem(s):\n  " + strings::join(problems, "\n  "),
        "rebuild the wheels named (or remove the stale one from the wheelhouse)");
  OPFORGE_CHECK(m.fs.create_directories(out));
  auto lock = OPFORGE_TRY(lock_dist(m, out, on_wait));
  // What the wheelhouse holds is read under its lock, and compared by bytes: another `opforge
  // index` may have landed a wheel of the same name since we looked (a check before the lock let
  // both runs succeed, the second reporting "unchanged" over bytes it did not have).
  std::vector<bool> there(incoming.size(), false);
  for (std::size_t i = 0; i < incoming.size(); ++i) {
    const auto& in = incoming[i];
    if (m.fs.type_of(out / in.name) == probe::FileType::none) continue;
    auto have = m.fs.read_file(out / in.name, wheel::Limits{}.archive_bytes);
    if (have && sha256_hex(*have) == in.sha256) there[i] = true;
    else problems.push_back(in.from.string() + ": " + (out / in.name).string() + " is a different wheel of that name");
  }
  if (!problems.empty())
    return bad_input(
        "not merged, " + std::to_string(problems.size()) + " problem(s):\n  " + strings::join(problems, "\n  "),
        "rebuild the wheels named (or remove the stale one from the wheelhouse)");
  MergeReport report;
  auto summary = read_summary(m.fs, out);
  for (std::size_t i = 0; i < incoming.size(); ++i) {
    const auto& in = incoming[i];
    if (!there[i]) {
      OPFORGE_CHECK(m.fs.write_file_atomic(out / in.name, in.bytes));
      if (in.record) OPFORGE_CHECK(m.fs.write_file_atomic(record::path_for(out / in.name), *in.record));
    }
    (there[i] ? report.unchanged : report.added).push_back(in.name);
  }
  for (auto& r : rows) merge_row(summary, r);
  OPFORGE_CHECK(rewrite(m.fs, out, std::move(summary)));
  return report;
}

}  // namespace opforge::pipeline
