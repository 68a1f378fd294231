#pragma once
/// What the files of compile/pch/ share and nothing outside the folder uses (pch.h is its
/// interface): small readers of compile lines, C/C++ text and compiler output.
#include <filesystem>
#include <string>
#include <string_view>

#include "compile/pch/pch.h"

namespace opforge::compile::pch {

/// Whether a file name is a C++ source's (.cpp, .cc, .cxx, .c++, .cp, .CPP, .C); compile_line.cpp.
bool is_cxx_source(std::string_view name);

/// The value of the compile's -DTORCH_EXTENSION_NAME ("" without one); compile_line.cpp.
std::string extension_name(const CompileLine& c);

/// The identifier `rest` starts with ("" when none): a macro's name; include_scan.cpp.
std::string macro_name(std::string_view rest);

/// The first line of a compiler's complaint, for the log; summary.cpp.
std::string first_error(std::string_view out);

/// Output without gcc's -Winvalid-pch lines (ours, not the project's); `reason` gets the first;
/// summary.cpp.
std::string drop_pch_warnings(std::string_view out, std::string& reason);

}  // namespace opforge::compile::pch
