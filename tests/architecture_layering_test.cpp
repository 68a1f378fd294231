// docs/architecture.md's "who includes whom", kept by a test: the layers are read from the page
// itself (so the page stays the one statement of them) and every #include under src/ is checked.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "test_util.h"

namespace opforge {
namespace {

namespace fs = std::filesystem;

struct Layers {
  std::map<std::string, int> level;                        ///< folder → its line in the block (0 = top)
  std::set<std::pair<std::string, std::string>> sideways;  ///< "a/ uses b/" on one line
  std::set<std::string> anywhere;                          ///< headers any folder may include
};

/// The fenced block after "## Layering": one line per level, folders first ("wheel/ record/"),
/// then prose in which "x/ uses y/" allows an include within the line; a first word that names a
/// header ("cache/layout.h") makes that header includable from every folder.
Layers read_layers(const std::string& page) {
  Layers out;
  const auto at = page.find("## Layering");
  if (at == std::string::npos) return out;
  const auto open = page.find("```", at);
  const auto close = page.find("```", open + 3);
  std::istringstream block(page.substr(open + 3, close - open - 3));
  const std::regex uses(R"(([a-z_]+)/ uses ([a-z_]+)/)");
  std::string line;
  int level = 0;
  while (std::getline(block, line)) {
    std::istringstream words(line);
    std::string w;
    bool any = false;
    while (words >> w) {
      if (w.find('.') != std::string::npos && w.find('/') != std::string::npos && !any) {
        out.anywhere.insert(w);
        any = true;
        break;
      }
      if (w.size() < 2 || w.back() != '/' || w.find_first_not_of("abcdefghijklmnopqrstuvwxyz_/") != std::string::npos)
        break;
      out.level[w.substr(0, w.size() - 1)] = level;
      any = true;
    }
    for (std::sregex_iterator it(line.begin(), line.end(), uses), end; it != end; ++it)
      out.sideways.emplace((*it)[1].str(), (*it)[2].str());
    if (any) ++level;
  }
  return out;
}

TEST(ArchitectureLayering, ThePageNamesEveryFolderOfTheCore) {
  const auto layers = read_layers(test_util::slurp(fs::path(OPFORGE_SOURCE_DIR) / "docs/architecture.md"));
  std::vector<std::string> unnamed;
  for (auto& e : fs::directory_iterator(fs::path(OPFORGE_SOURCE_DIR) / "src")) {
    const auto name = e.path().filename().string();
    // The bundled ops and the Python package are not C++ of the core.
    if (!e.is_directory() || name == "kernels" || name == "python") continue;
    if (!layers.level.contains(name)) unnamed.push_back(name);
  }
  EXPECT_EQ(unnamed, std::vector<std::string>{});
  EXPECT_TRUE(layers.anywhere.contains("cache/layout.h"));
}

TEST(ArchitectureLayering, IncludesPointDownTheLayers) {
  const auto layers = read_layers(test_util::slurp(fs::path(OPFORGE_SOURCE_DIR) / "docs/architecture.md"));
  ASSERT_GT(layers.level.size(), 10u);
  const std::regex include(R"re(#include "([a-z_]+)/([^"]+)")re");
  std::vector<std::string> upward;
  int checked = 0;
  for (auto& [rel, text] : test_util::core_sources()) {
    const auto from = rel.substr(0, rel.find('/'));
    const auto from_level = layers.level.find(from);
    if (from_level == layers.level.end()) continue;  // a folder the test above names
    for (std::sregex_iterator it(text.begin(), text.end(), include), end; it != end; ++it) {
      const auto to = (*it)[1].str();
      const auto to_level = layers.level.find(to);
      // Generated headers (opforge/version.h) and the folder's own.
      if (to_level == layers.level.end() || to == from) continue;
      ++checked;
      if (layers.anywhere.contains(to + "/" + (*it)[2].str())) continue;
      if (to_level->second < from_level->second) continue;
      if (to_level->second == from_level->second && layers.sideways.contains({from, to})) continue;
      upward.push_back(rel + " includes " + to + "/" + (*it)[2].str());
    }
  }
  EXPECT_GT(checked, 100);
  EXPECT_EQ(upward, std::vector<std::string>{})
      << "docs/architecture.md's \"Layering\" block says who may include whom";
}

TEST(ArchitectureLayering, TheReaderUnderstandsThePageForm) {
  const auto layers = read_layers(
      "## Layering\n```\nutil/   strings\ncache/layout.h   names only\nwheel/ record/   formats (record/ uses wheel/)\n"
      "cli/   commands\n```\n");
  EXPECT_EQ(layers.level, (std::map<std::string, int>{{"util", 0}, {"wheel", 2}, {"record", 2}, {"cli", 3}}));
  EXPECT_TRUE(layers.sideways.contains({"record", "wheel"}));
  EXPECT_FALSE(layers.sideways.contains({"wheel", "record"}));
  EXPECT_EQ(layers.anywhere, std::set<std::string>{"cache/layout.h"});
}

}  // namespace
}  // namespace opforge
