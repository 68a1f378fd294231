#pragma once
/// build.ninja: what it can hold (checked before it is written) and its text.
#include <filesystem>
#include <string>

#include "compile/native/graph.h"
#include "util/error.h"

namespace opforge::compile {

/// bad_input when a string of `graph` cannot be written into build.ninja (a line break, NUL, '|'
/// in a path) or an nvcc argument holds '$' or '`' (nvcc's own shell would expand it); failed
/// (internal) for an output outside `build`.
Status check_for_ninja(const Graph& graph, const std::filesystem::path& build);

/// Renders build.ninja for `graph`.
std::string render_ninja(const Graph& graph, const std::filesystem::path& build_dir);

}  // namespace opforge::compile
