/// What a host compile logs and the build reads back (compile/pch/pch.h): the compiler's first
/// error, gcc's -Winvalid-pch lines taken out of its output, and the log summed up in one line.
#include <cstdio>

#include "compile/pch/detail.h"
#include "compile/pch/pch.h"
#include "util/strings.h"

namespace opforge::compile::pch {

/// The first line of a compiler's complaint, for the log.
std::string first_error(std::string_view out) {
  for (auto line : strings::split(out, '\n'))
    if (line.find("error") != std::string_view::npos) return strings::cut(strings::trim(line), 200);
  return strings::cut(strings::trim(out), 200);
}

/// Output without gcc's -Winvalid-pch lines (ours, not the project's); `reason` gets the first.
std::string drop_pch_warnings(std::string_view out, std::string& reason) {
  std::string kept;
  for (auto line : strings::split(out, '\n')) {
    if (line.find("[-Winvalid-pch]") != std::string_view::npos ||
        line.find(".gch: not used because") != std::string_view::npos ||
        line.find("not a valid precompiled header") != std::string_view::npos) {
      if (reason.empty()) reason = strings::cut(strings::trim(line), 200);
      continue;
    }
    kept += std::string(line) + "\n";
  }
  return kept;
}

Summary summarize(std::string_view log) {
  Summary s;
  std::set<std::string> notes;
  for (auto line : strings::split(log, '\n')) {
    auto f = strings::split(line, '\t');
    if (f.size() < 2) continue;
    const std::string& what = f[0];
    const std::string src = fs::path(f[1]).filename().string();
    const std::string detail = f.size() > 2 ? f[2] : std::string();
    if (what == "made") {
      ++s.made;
      try {
        s.make_seconds += std::stod(detail);
        if (f.size() > 3) s.gch_bytes += std::stoull(f[3]);
      } catch (...) {}
    } else if (what == "used") ++s.used;
    else if (what == "not-used") {
      ++s.not_used;
      notes.insert(src + ": gcc did not use it (" + detail + ")");
    } else if (what == "fallback") {
      ++s.fallback;
      notes.insert(src + ": failed with it, compiled again without it (" + detail + ")");
    } else if (what == "skipped") {
      ++s.skipped;
      notes.insert(src + ": " + detail);
    } else if (what == "busy") ++s.busy;
    else if (what == "plain") ++s.plain;
    else if (what == "first") ++s.first;
  }
  s.notes.assign(notes.begin(), notes.end());
  return s;
}

std::string summary_line(const Summary& s) {
  const unsigned total = s.used + s.not_used + s.fallback + s.skipped + s.busy + s.first;
  char size[32];
  std::snprintf(size, sizeof size, "%.0f MiB", static_cast<double>(s.gch_bytes) / (1024.0 * 1024.0));
  std::string out = "precompiled torch header: ";
  // The seconds come from the build's pch log, which a child writes: a huge or NaN value is shown
  // as 0, never cast out of long's range (undefined behaviour; found by host_compile_fuzz).
  const double secs = s.make_seconds >= 0 && s.make_seconds < 1e9 ? s.make_seconds : 0;
  out += s.made
             ? std::to_string(s.made) + " made (" + std::to_string(static_cast<long>(secs + 0.5)) + " s, " + size + ")"
         : s.used + s.not_used + s.fallback ? std::string("reused from the cache")
                                            : std::string("none made");
  out += ", used by " + std::to_string(s.used) + " of " + std::to_string(total) + " C++ compiles that include " +
         std::string(kHeader);
  if (s.first)
    out += "; " + std::to_string(s.first) + " compiled without it before " + std::to_string(kMakeAt) +
           " compiles needed the same one";
  if (s.busy) out += "; " + std::to_string(s.busy) + " compiled without it while it was being made";
  if (s.fallback + s.not_used + s.skipped)
    out += "; " + std::to_string(s.fallback + s.not_used + s.skipped) + " without it (below)";
  return out;
}

}  // namespace opforge::compile::pch
