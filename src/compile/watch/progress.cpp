#include "compile/watch/progress.h"

#include <algorithm>
#include <charconv>
#include <chrono>

namespace opforge::compile {
namespace {

double steady_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

/// Reads an unsigned decimal number and the space after it; false when `s` does not start so.
bool take_number(std::string_view& s, int& out) {
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  if (ec != std::errc() || end == s.data() || end == s.data() + s.size()) return false;
  s.remove_prefix(static_cast<std::size_t>(end - s.data()));
  return true;
}

bool is_digit(char c) { return c >= '0' && c <= '9'; }

/// "[12/345] " at the start of `line`: its length, or 0.
std::size_t counter_length(std::string_view line) {
  std::size_t i = 0;
  if (line.empty() || line[i++] != '[') return 0;
  const std::size_t first = i;
  while (i < line.size() && is_digit(line[i])) ++i;
  if (i == first || i >= line.size() || line[i++] != '/') return 0;
  const std::size_t second = i;
  while (i < line.size() && is_digit(line[i])) ++i;
  if (i == second || i + 1 >= line.size() || line[i] != ']' || line[i + 1] != ' ') return 0;
  return i + 2;
}

/// `s` without terminal escape sequences (ESC '[' parameters final-byte): ninja on a terminal
/// colours its "FAILED: ".
std::string without_escapes(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\x1b' && i + 1 < s.size() && s[i + 1] == '[') {
      i += 2;
      while (i < s.size() && !(s[i] >= 0x40 && s[i] <= 0x7e)) ++i;
      continue;
    }
    out.push_back(s[i]);
  }
  return out;
}

/// "<started> <finished> <total>: <description>" (kNinjaStatus after its marker).
bool parse_status(std::string_view rest, int& started, int& finished, int& total, std::string& what) {
  if (!take_number(rest, started) || !rest.starts_with(' ')) return false;
  rest.remove_prefix(1);
  if (!take_number(rest, finished) || !rest.starts_with(' ')) return false;
  rest.remove_prefix(1);
  if (!take_number(rest, total) || !rest.starts_with(": ")) return false;
  rest.remove_prefix(2);
  what = std::string(rest);
  return true;
}

}  // namespace

std::string short_ninja_line(std::string_view line) {
  const std::size_t counter = counter_length(line);
  if (counter == 0) return {};
  // A compiler command line: its output file, after the last " -o ".
  const std::size_t o = line.rfind(" -o ");
  if (o == std::string_view::npos || o < counter) return std::string(line);
  std::string_view out = line.substr(o + 4);
  out = out.substr(0, out.find(' '));
  const std::size_t slash = out.rfind('/');
  if (slash != std::string_view::npos) out.remove_prefix(slash + 1);
  return std::string(line.substr(0, counter)) + std::string(out);
}

NinjaStatusReader::NinjaStatusReader(StepSink on_step, std::function<void(std::string_view)> on_line, Clock clock)
    : on_step_(std::move(on_step)), on_line_(std::move(on_line)), clock_(clock ? std::move(clock) : steady_seconds) {}

void NinjaStatusReader::line(std::string_view raw) {
  // A terminal line holds any number of status segments, each begun by '\r' and ended by the
  // erase-to-end-of-line sequence; output that follows a status starts on its own line.
  std::size_t start = 0;
  while (start <= raw.size()) {
    std::size_t cr = raw.find('\r', start);
    std::string_view segment = raw.substr(start, cr == std::string_view::npos ? std::string_view::npos : cr - start);
    if (segment.ends_with("\x1b[K")) segment.remove_suffix(3);
    constexpr std::string_view marker = "opforge-ninja ";
    int started = 0, finished = 0, total = 0;
    std::string what;
    if (segment.starts_with(marker) && parse_status(segment.substr(marker.size()), started, finished, total, what))
      status(segment.substr(marker.size()));
    else if (!segment.empty() || (cr == std::string_view::npos && start == 0)) {
      if (on_line_)
        on_line_(segment.find('\x1b') == std::string_view::npos ? std::string(segment) : without_escapes(segment));
    }
    if (cr == std::string_view::npos) break;
    start = cr + 1;
  }
}

void NinjaStatusReader::status(std::string_view text) {
  int started = 0, finished = 0, total = 0;
  std::string what;
  if (!parse_status(text, started, finished, total, what)) return;
  const double now = clock_();
  // A start raises the started count alone; an end raises the finished count (and, from ninja in
  // a pipe, which prints only as steps end, the started count with it).
  if (finished <= finished_) {
    if (started <= started_) return;
    started_ = started;
    running_.emplace_back(what, now);
    if (on_step_) on_step_({StepEvent::Kind::started, what, finished_, total, -1, true});
    return;
  }
  started_ = std::max(started_, started);
  finished_ = finished;
  double seconds = -1;
  if (auto it = std::find_if(running_.begin(), running_.end(), [&](auto& r) { return r.first == what; });
      it != running_.end()) {
    seconds = now - it->second;
    running_.erase(it);
  }
  // What ninja prints in a pipe for a finished step: the lines after it keep their meaning.
  if (on_line_) on_line_("[" + std::to_string(finished) + "/" + std::to_string(total) + "] " + what);
  if (on_step_) on_step_({StepEvent::Kind::finished, what, finished, total, seconds, true});
}

}  // namespace opforge::compile
