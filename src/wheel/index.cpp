#include "wheel/index.h"
#include "wheel/wheel.h"

#include <algorithm>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "util/hash.h"
#include "util/json.h"
#include "util/strings.h"
#include "wheel/internal.h"
#include "wheel/variant.h"

namespace opforge::wheel {

namespace {

/// The characters of a file name that HTML attributes and text need escaped.
std::string html_escape(std::string_view s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

/// A file name's characters that a URL path cannot hold as they are ('+' of a local version is
/// kept: pip and every static server read it literally in a path).
std::string url_escape(std::string_view s) {
  static const char* hex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~' || c == '+' || c == '!') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += hex[c >> 4];
      out += hex[c & 15];
    }
  }
  return out;
}

std::string page(std::string_view title, const std::string& body) {
  return "<!DOCTYPE html>\n<html>\n  <head>\n    <meta name=\"pypi:repository-version\" content=\"1.0\">\n"
         "    <title>" +
         html_escape(title) + "</title>\n  </head>\n  <body>\n" + body + "  </body>\n</html>\n";
}

}  // namespace

std::string index_project_name(std::string_view name) { return project_name(name); }

std::string simple_root_page(std::vector<std::string> projects) {
  std::sort(projects.begin(), projects.end());
  projects.erase(std::unique(projects.begin(), projects.end()), projects.end());
  std::string body;
  for (auto& p : projects) body += "    <a href=\"" + url_escape(p) + "/\">" + html_escape(p) + "</a><br>\n";
  return page("Simple index", body);
}

std::string simple_project_page(std::string_view project, std::vector<IndexFile> files) {
  std::sort(files.begin(), files.end(), [](auto& a, auto& b) { return a.filename < b.filename; });
  std::string body = "    <h1>Links for " + html_escape(project) + "</h1>\n";
  for (auto& f : files) {
    // PEP 714's data-core-metadata, and PEP 658's older name, which pip before 23.3 reads.
    std::string metadata;
    if (!f.metadata_sha256.empty())
      metadata = " data-dist-info-metadata=\"sha256=" + f.metadata_sha256 +
                 "\" data-core-metadata=\"sha256=" + f.metadata_sha256 + "\"";
    body += "    <a href=\"../../" + url_escape(f.filename) + "#sha256=" + f.sha256 + "\"" + metadata + ">" +
            html_escape(f.filename) + "</a><br>\n";
  }
  return page("Links for " + std::string(project), body);
}

std::string simple_root_json(std::vector<std::string> projects) {
  std::sort(projects.begin(), projects.end());
  projects.erase(std::unique(projects.begin(), projects.end()), projects.end());
  nlohmann::json list = nlohmann::json::array();
  for (auto& p : projects) list.push_back({{"name", p}});
  return util::json_dump({{"meta", {{"api-version", std::string(kSimpleJsonApiVersion)}}}, {"projects", list}}, 2) +
         "\n";
}

std::string simple_project_json(std::string_view project, std::vector<IndexFile> files) {
  std::sort(files.begin(), files.end(), [](auto& a, auto& b) { return a.filename < b.filename; });
  nlohmann::json list = nlohmann::json::array();
  std::set<std::string> versions;
  for (auto& f : files) {
    nlohmann::json file = {{"filename", f.filename},
                           {"url", "../../" + url_escape(f.filename)},
                           {"hashes", {{"sha256", f.sha256}}},
                           {"size", f.size}};
    if (!f.metadata_sha256.empty()) {
      file["core-metadata"] = {{"sha256", f.metadata_sha256}};
      file["dist-info-metadata"] = {{"sha256", f.metadata_sha256}};
    }
    list.push_back(std::move(file));
    if (auto parts = parse_wheel_filename(f.filename)) versions.insert(parts->version);
  }
  return util::json_dump({{"meta", {{"api-version", std::string(kSimpleJsonApiVersion)}}},
                          {"name", std::string(project)},
                          {"files", list},
                          {"versions", versions}},
                         2) +
         "\n";
}

std::optional<std::string> wheel_metadata(std::string_view bytes) {
  auto entries = read_archive(bytes, Keep::dist_info);
  if (!entries) return std::nullopt;
  std::optional<std::string> found;
  for (const auto& e : *entries) {
    const std::string_view folder = dist_info_of(e.path);
    if (folder.empty() || e.path.size() != folder.size() + 9 || !e.path.ends_with("/METADATA")) continue;
    if (found) return std::nullopt;  // two .dist-info folders: not a wheel pip would install
    found = e.content;
  }
  return found;
}

std::string wheel_project(std::string_view filename) {
  auto parts = parse_wheel_filename(filename);
  return parts ? project_name(parts->name) : std::string();
}

Status write_simple_index(probe::FileSystem& fs, const fs::path& dist) {
  std::map<std::string, std::vector<IndexFile>> projects;
  std::set<std::string> wheels;
  std::map<std::pair<std::string, std::string>, std::vector<Variant>> variants;  // (project, name-version)
  const auto listed = OPFORGE_TRY(fs.list_directory(dist));
  for (auto& n : listed) {
    // Hidden names are opforge's staged files (a commit in progress), never served.
    if (n.starts_with(".") || fs.type_of(dist / n) != probe::FileType::regular) continue;
    auto project = wheel_project(n);
    if (project.empty()) continue;
    auto bytes = OPFORGE_TRY(fs.read_file(dist / n, Limits{}.archive_bytes));
    IndexFile file{n, sha256_hex(bytes), {}, bytes.size()};
    // A variant wheel's variant.json joins its version's variants.json; one that does not describe
    // the wheel's own label (verify says so) is left out of it.
    if (auto name = parse_wheel_filename(n); name && !name->variant.empty())
      if (auto text = wheel_variant_json(bytes))
        if (auto listed_variants = parse_variants(*text);
            listed_variants && listed_variants->size() == 1 && listed_variants->front().label == name->variant)
          variants[{project, name->name + "-" + name->version}].push_back(listed_variants->front());
    if (auto metadata = wheel_metadata(bytes)) {
      OPFORGE_CHECK(fs.write_file_atomic(dist / (n + std::string(kMetadataSuffix)), *metadata));
      file.metadata_sha256 = sha256_hex(*metadata);
      wheels.insert(n);
    }
    projects[project].push_back(std::move(file));
  }
  // A .metadata file serves its wheel only: one whose wheel is gone (or unreadable) goes.
  for (auto& n : listed)
    if (!n.starts_with(".") && n.ends_with(".whl" + std::string(kMetadataSuffix)) &&
        !wheels.contains(n.substr(0, n.size() - kMetadataSuffix.size())) &&
        fs.type_of(dist / n) == probe::FileType::regular)
      OPFORGE_CHECK(fs.remove_all(dist / n));
  // {name}-{version}-variants.json per version with variant wheels, listed on its project's page.
  std::set<std::string> variant_files;
  for (auto& [key, list] : variants) {
    const std::string n = key.second + std::string(kVariantsIndexSuffix), text = variants_index_json(list);
    OPFORGE_CHECK(fs.write_file_atomic(dist / n, text));
    variant_files.insert(n);
    projects[key.first].push_back({n, sha256_hex(text), {}, text.size()});
  }
  // One whose version has no variant wheel left goes (only NAME-VERSION-variants.json names).
  for (auto& n : listed)
    if (!n.starts_with(".") && n.ends_with(kVariantsIndexSuffix) && !variant_files.contains(n) &&
        strings::split(n.substr(0, n.size() - kVariantsIndexSuffix.size()), '-').size() == 2 &&
        fs.type_of(dist / n) == probe::FileType::regular)
      OPFORGE_CHECK(fs.remove_all(dist / n));
  const fs::path simple = dist / "simple";
  OPFORGE_CHECK(fs.create_directories(simple));
  std::vector<std::string> names;
  for (auto& [project, files] : projects) {
    names.push_back(project);
    OPFORGE_CHECK(fs.create_directories(simple / project));
    OPFORGE_CHECK(fs.write_file_atomic(simple / project / "index.html", simple_project_page(project, files)));
    OPFORGE_CHECK(fs.write_file_atomic(simple / project / "index.json", simple_project_json(project, files)));
  }
  for (auto& n : OPFORGE_TRY(fs.list_directory(simple)))
    if (!projects.contains(n) && fs.type_of(simple / n) == probe::FileType::directory)
      OPFORGE_CHECK(fs.remove_all(simple / n));
  OPFORGE_CHECK(fs.write_file_atomic(simple / "index.json", simple_root_json(names)));
  return fs.write_file_atomic(simple / "index.html", simple_root_page(names));
}

Result<std::vector<std::string>> check_variants_index(const probe::FileSystem& fs, const fs::path& dist) {
  std::vector<std::string> problems;
  std::map<std::string, std::optional<std::vector<Variant>>> files;  // name-version → what its file lists
  for (auto& n : OPFORGE_TRY(fs.list_directory(dist))) {
    auto name = parse_wheel_filename(n);
    if (n.starts_with(".") || !name || name->variant.empty() || fs.type_of(dist / n) != probe::FileType::regular)
      continue;
    auto bytes = OPFORGE_TRY(fs.read_file(dist / n, Limits{}.archive_bytes));
    auto text = wheel_variant_json(bytes);
    auto own = text ? parse_variants(*text) : Result<std::vector<Variant>>(bad_input("missing"));
    if (!own || own->size() != 1) {
      problems.push_back(n + ": its " + std::string(kVariantDistInfoFile) + " is " +
                         (own ? "not one variant" : own.error().message));
      continue;
    }
    const Variant& mine = own->front();
    const std::string index = name->name + "-" + name->version + std::string(kVariantsIndexSuffix);
    if (!files.contains(index)) {
      auto listed = fs.read_file(dist / index);
      if (!listed) files[index] = std::nullopt;
      else if (auto parsed = parse_variants(*listed)) files[index] = *parsed;
      else {
        problems.push_back(index + ": " + parsed.error().message);
        files[index] = std::vector<Variant>{};
      }
    }
    const auto& listed = files[index];
    if (!listed) {
      problems.push_back(n + ": variant '" + mine.label + "', but " + index + " is missing");
      continue;
    }
    auto it = std::find_if(listed->begin(), listed->end(), [&](const Variant& v) { return v.label == mine.label; });
    if (it == listed->end()) {
      problems.push_back(n + ": " + index + " does not list its variant '" + mine.label + "'");
      continue;
    }
    for (const auto& p : mine.properties)
      if (std::find(it->properties.begin(), it->properties.end(), p) == it->properties.end())
        problems.push_back(n + ": its variant.json says '" + p.str() + "', " + index + " does not (variant '" +
                           mine.label + "')");
    for (const auto& p : it->properties)
      if (std::find(mine.properties.begin(), mine.properties.end(), p) == mine.properties.end())
        problems.push_back(n + ": " + index + " says '" + p.str() + "', its variant.json does not (variant '" +
                           mine.label + "')");
  }
  return problems;
}

}  // namespace opforge::wheel
