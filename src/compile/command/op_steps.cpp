#include "compile/command/op_steps.h"

#include "util/strings.h"

namespace opforge::compile {

namespace fs = std::filesystem;

std::optional<std::vector<std::string>> build_ext_command(const std::vector<std::string>& command) {
  for (std::size_t i = 0; i < command.size(); ++i)
    if (fs::path(command[i]).filename() == "setup.py") {
      std::vector<std::string> out(command.begin(), command.begin() + static_cast<std::ptrdiff_t>(i) + 1);
      out.emplace_back("build_ext");
      return out;
    }
  return std::nullopt;
}

}  // namespace opforge::compile
