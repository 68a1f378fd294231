#include "wheel/index.h"
#include "wheel/wheel.h"

#include <algorithm>
#include <map>

#include "util/hash.h"
#include "util/strings.h"

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
  for (auto& f : files)
    body += "    <a href=\"../../" + url_escape(f.filename) + "#sha256=" + f.sha256 + "\">" + html_escape(f.filename) +
            "</a><br>\n";
  return page("Links for " + std::string(project), body);
}

std::string wheel_project(std::string_view filename) {
  auto parts = parse_wheel_filename(filename);
  return parts ? project_name(parts->name) : std::string();
}

Status write_simple_index(probe::FileSystem& fs, const fs::path& dist) {
  std::map<std::string, std::vector<IndexFile>> projects;
  for (auto& n : OPFORGE_TRY(fs.list_directory(dist))) {
    // Hidden names are opforge's staged files (a commit in progress), never served.
    if (n.starts_with(".") || fs.type_of(dist / n) != probe::FileType::regular) continue;
    auto project = wheel_project(n);
    if (project.empty()) continue;
    auto bytes = OPFORGE_TRY(fs.read_file(dist / n, Limits{}.archive_bytes));
    projects[project].push_back({n, sha256_hex(bytes)});
  }
  const fs::path simple = dist / "simple";
  OPFORGE_CHECK(fs.create_directories(simple));
  std::vector<std::string> names;
  for (auto& [project, files] : projects) {
    names.push_back(project);
    OPFORGE_CHECK(fs.create_directories(simple / project));
    OPFORGE_CHECK(fs.write_file_atomic(simple / project / "index.html", simple_project_page(project, files)));
  }
  for (auto& n : OPFORGE_TRY(fs.list_directory(simple)))
    if (!projects.contains(n) && fs.type_of(simple / n) == probe::FileType::directory)
      OPFORGE_CHECK(fs.remove_all(simple / n));
  return fs.write_file_atomic(simple / "index.html", simple_root_page(names));
}

}  // namespace opforge::wheel
