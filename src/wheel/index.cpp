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

std::string href_of(const IndexFile& f) { return f.href.empty() ? "../../" + url_escape(f.filename) : f.href; }

/// What decides whether two wheels carry the same files: each file's path, digest and executable
/// bit, but for RECORD (which lists variant.json in a variant wheel) and variant.json itself.
std::string files_key(const std::vector<Entry>& entries) {
  std::vector<std::string> lines;
  for (const auto& e : entries) {
    if (e.is_directory) continue;
    const std::string_view folder = dist_info_of(e.path);
    if (!folder.empty()) {
      const std::string_view leaf = std::string_view(e.path).substr(folder.size());
      if (leaf == "/RECORD" || leaf == "/" + std::string(kVariantDistInfoFile)) continue;
    }
    lines.push_back(e.path + "\t" + to_hex(e.sha256) + ((e.mode & 0111) ? "\tx" : "") + (e.is_symlink ? "\tl" : ""));
  }
  std::sort(lines.begin(), lines.end());
  return strings::join(lines, "\n");
}

/// The METADATA of a wheel's entries (its one .dist-info's), read with at least Keep::dist_info.
std::optional<std::string> metadata_of(const std::vector<Entry>& entries) {
  std::optional<std::string> found;
  for (const auto& e : entries) {
    const std::string_view folder = dist_info_of(e.path);
    if (folder.empty() || e.path.size() != folder.size() + 9 || !e.path.ends_with("/METADATA")) continue;
    if (found) return std::nullopt;  // two .dist-info folders: not a wheel pip would install
    found = e.content;
  }
  return found;
}

/// Writes the pages of one index (simple/ or a variant's) for `projects`, and removes the pages of
/// projects no longer in it.
Status write_pages(probe::FileSystem& fs, const fs::path& simple,
                   const std::map<std::string, std::vector<IndexFile>>& projects) {
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

/// A wheel of dist/ as the variant indexes need it.
struct SeenWheel {
  std::string project, label;  ///< label: a variant wheel's, when its variant.json describes it
  IndexFile file;
  std::string files;  ///< files_key()
};

/// <dist>/variants/<label>/: each variant wheel under its plain wheel's name, linked to that plain
/// wheel when it carries the same files, else copied (with its .metadata) beside the label's
/// simple/. What no wheel asks for any more is removed.
Status write_variant_indexes(probe::FileSystem& fs, const fs::path& dist,
                             const std::map<std::string, SeenWheel>& seen) {
  const fs::path root = dist / kVariantIndexesDir;
  std::map<std::string, std::map<std::string, std::vector<IndexFile>>> indexes;  // label → project → files
  std::map<std::string, std::set<std::string>> copies;                           // label → files kept
  for (const auto& [n, w] : seen) {
    // A label is a folder name here: "." and ".." (labels the draft allows) would lead out of
    // variants/, and hidden names are staged files; such a variant gets no index of its own.
    if (w.label.empty() || w.label.starts_with(".")) continue;
    const std::string plain = n.substr(0, n.size() - w.label.size() - 5) + ".whl";  // "-<label>.whl"
    IndexFile file = w.file;
    file.filename = plain;
    if (auto twin = seen.find(plain);
        twin != seen.end() && twin->second.label.empty() && twin->second.files == w.files) {
      file = twin->second.file;
      file.href = "../../../../" + url_escape(plain);
    } else {
      const fs::path folder = root / w.label;
      OPFORGE_CHECK(fs.create_directories(folder));
      auto bytes = OPFORGE_TRY(fs.read_file(dist / n, Limits{}.archive_bytes));
      if (sha256_hex(bytes) != w.file.sha256)
        return failure((dist / n).string() + " changed while the index was written",
                       "write the index again when no other build writes to " + dist.string());
      OPFORGE_CHECK(fs.write_file_atomic(folder / plain, bytes, 0644));
      copies[w.label].insert(plain);
      if (auto metadata = wheel_metadata(bytes)) {
        OPFORGE_CHECK(fs.write_file_atomic(folder / (plain + std::string(kMetadataSuffix)), *metadata));
        copies[w.label].insert(plain + std::string(kMetadataSuffix));
      }
      file.href = "../../" + url_escape(plain);
    }
    indexes[w.label][w.project].push_back(std::move(file));
  }
  if (indexes.empty()) return fs.type_of(root) == probe::FileType::none ? Status{} : fs.remove_all(root);
  for (const auto& [label, projects] : indexes)
    OPFORGE_CHECK(write_pages(fs, dist / variant_index_path(label), projects));
  for (auto& label : OPFORGE_TRY(fs.list_directory(root))) {
    if (!indexes.contains(label)) {
      OPFORGE_CHECK(fs.remove_all(root / label));
      continue;
    }
    for (auto& n : OPFORGE_TRY(fs.list_directory(root / label)))
      if (!n.starts_with(".") && n != "simple" && !copies[label].contains(n))
        OPFORGE_CHECK(fs.remove_all(root / label / n));
  }
  return {};
}

/// What is wrong with the index plain pip reads for the variant wheel `n` (`bytes`, its variant's
/// `label`): variants/<label>/simple/<project>/ must list the plain wheel's name, with the sha256 of
/// the file it links to, whose files are this wheel's. nullopt when it is right.
std::optional<std::string> plain_pip_problem(const probe::FileSystem& fs, const fs::path& dist, const std::string& n,
                                             const std::string& label, std::string_view bytes) {
  const std::string plain = n.substr(0, n.size() - label.size() - 5) + ".whl";
  const std::string where = variant_index_path(label) + "/" + wheel_project(n) + "/";
  const std::string fix = " (`opforge index " + dist.string() + "` writes it again)";
  auto page = fs.read_file(dist / where / "index.html");
  const std::size_t text = page ? page->find(">" + html_escape(plain) + "</a>") : std::string::npos;
  const std::size_t open = text == std::string::npos ? text : page->rfind("<a href=\"", text);
  const std::size_t hash = open == std::string::npos ? open : page->find("#sha256=", open);
  if (hash == std::string::npos || hash > text)
    return n + ": " + where + " (the index plain pip reads for variant '" + label + "') does not list " + plain + fix;
  const std::string href = page->substr(open + 9, hash - open - 9), listed = page->substr(hash + 8, 64);
  fs::path file;
  if (href == "../../../../" + url_escape(plain)) file = dist / plain;
  else if (href == "../../" + url_escape(plain)) file = dist / kVariantIndexesDir / label / plain;
  else return n + ": " + where + " links " + plain + " to " + href + ", which is no file of the wheelhouse" + fix;
  auto served = fs.read_file(file, Limits{}.archive_bytes);
  if (!served) return n + ": " + where + " serves " + file.string() + ", which cannot be read" + fix;
  if (sha256_hex(*served) != listed)
    return n + ": " + where + " lists " + plain + " with sha256 " + listed + ", " + file.string() + " has " +
           sha256_hex(*served) + fix;
  auto mine = read_archive(bytes, Keep::dist_info), theirs = read_archive(*served, Keep::dist_info);
  if (!mine || !theirs || files_key(*mine) != files_key(*theirs))
    return n + ": " + where + " serves " + file.string() + ", whose files are not this wheel's" + fix;
  return std::nullopt;
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
    body += "    <a href=\"" + href_of(f) + "#sha256=" + f.sha256 + "\"" + metadata + ">" + html_escape(f.filename) +
            "</a><br>\n";
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
    nlohmann::json file = {
        {"filename", f.filename}, {"url", href_of(f)}, {"hashes", {{"sha256", f.sha256}}}, {"size", f.size}};
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
  return metadata_of(*entries);
}

std::string variant_index_path(std::string_view label) {
  return std::string(kVariantIndexesDir) + "/" + std::string(label) + "/simple";
}

std::string wheel_project(std::string_view filename) {
  auto parts = parse_wheel_filename(filename);
  return parts ? project_name(parts->name) : std::string();
}

Status write_simple_index(probe::FileSystem& fs, const fs::path& dist) {
  std::map<std::string, std::vector<IndexFile>> projects;
  std::set<std::string> wheels;
  std::map<std::pair<std::string, std::string>, std::vector<Variant>> variants;  // (project, name-version)
  std::map<std::string, SeenWheel> seen;  // file name → what the variant indexes need of it
  const auto listed = OPFORGE_TRY(fs.list_directory(dist));
  for (auto& n : listed) {
    // Hidden names are opforge's staged files (a commit in progress), never served.
    if (n.starts_with(".") || fs.type_of(dist / n) != probe::FileType::regular) continue;
    auto project = wheel_project(n);
    if (project.empty()) continue;
    auto bytes = OPFORGE_TRY(fs.read_file(dist / n, Limits{}.archive_bytes));
    IndexFile file{n, sha256_hex(bytes), {}, bytes.size()};
    auto entries = read_archive(bytes, Keep::dist_info);
    std::string label;
    // A variant wheel's variant.json joins its version's variants.json; one that does not describe
    // the wheel's own label (verify says so) is left out of it.
    if (auto name = parse_wheel_filename(n); entries && name && !name->variant.empty())
      for (const auto& e : *entries)
        if (const std::string_view folder = dist_info_of(e.path);
            !folder.empty() &&
            std::string_view(e.path).substr(folder.size()) == "/" + std::string(kVariantDistInfoFile))
          if (auto listed_variants = parse_variants(e.content);
              listed_variants && listed_variants->size() == 1 && listed_variants->front().label == name->variant) {
            variants[{project, name->name + "-" + name->version}].push_back(listed_variants->front());
            label = name->variant;
          }
    if (auto metadata = entries ? metadata_of(*entries) : std::nullopt) {
      OPFORGE_CHECK(fs.write_file_atomic(dist / (n + std::string(kMetadataSuffix)), *metadata));
      file.metadata_sha256 = sha256_hex(*metadata);
      wheels.insert(n);
    }
    if (entries) seen[n] = {project, label, file, files_key(*entries)};
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
  OPFORGE_CHECK(write_pages(fs, dist / "simple", projects));
  return write_variant_indexes(fs, dist, seen);
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
    if (mine.label == name->variant && !mine.label.starts_with("."))
      if (auto problem = plain_pip_problem(fs, dist, n, mine.label, bytes)) problems.push_back(*problem);
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
