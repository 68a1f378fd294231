#include "cli/progress.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <iostream>

#include "settings/settings.h"

namespace opforge::cli {
namespace {

std::string seconds_text(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f s", s);
  return buf;
}

std::string clock_text(std::chrono::steady_clock::duration d) {
  const auto s = std::chrono::duration_cast<std::chrono::seconds>(d).count();
  char buf[32];
  std::snprintf(buf, sizeof buf, "%lld:%02lld", static_cast<long long>(s / 60), static_cast<long long>(s % 60));
  return buf;
}

std::size_t terminal_width() {
  winsize ws{};
  if (::ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 10) return ws.ws_col;
  return 80;
}

}  // namespace

bool ProgressDisplay::stdout_is_terminal(const probe::Environment& env) {
  return ::isatty(STDOUT_FILENO) == 1 && settings::capable_terminal(env);
}

ProgressDisplay::ProgressDisplay(Verbosity verbosity, bool command_build, bool terminal)
    : verbosity_(verbosity), command_(command_build), terminal_(terminal && verbosity != Verbosity::quiet) {
  if (!terminal_) return;
  ticker_ = std::jthread([this](std::stop_token stop) {
    std::unique_lock lock(mu_);
    while (!stop.stop_requested()) {
      tick_.wait_for(lock, stop, std::chrono::seconds(1), [] { return false; });
      if (!stop.stop_requested() && !stopped_ && (!running_.empty() || drawn_)) draw();
    }
  });
}

ProgressDisplay::~ProgressDisplay() { stop(); }

void ProgressDisplay::stop() {
  if (ticker_.joinable()) {
    ticker_.request_stop();
    ticker_.join();
  }
  std::lock_guard lock(mu_);
  if (drawn_) std::cout << "\r\x1b[K" << std::flush;
  drawn_ = false;
  stopped_ = true;
}

void ProgressDisplay::print_line(const std::string& text) {
  if (drawn_) std::cout << "\r\x1b[K";
  std::cout << text << "\n";
  drawn_ = false;
  if (terminal_ && !stopped_ && !running_.empty()) draw();
  std::cout << std::flush;
}

std::string ProgressDisplay::status_text() const {
  const auto now = Clock::now();
  std::string s = "[" + std::to_string(done_) + "/" + (total_ > 0 ? std::to_string(total_) : "?") + " " +
                  clock_text(now - start_) + "]";
  if (!running_.empty()) {
    // The step that has run longest: a slow one stays named until it ends.
    auto oldest =
        std::min_element(running_.begin(), running_.end(), [](auto& a, auto& b) { return a.second < b.second; });
    s += " " + oldest->first + " (" + clock_text(now - oldest->second) + ")";
    if (running_.size() > 1) s += " +" + std::to_string(running_.size() - 1) + " more";
  }
  if (!detail_.empty()) s += "  " + detail_;
  return s;
}

void ProgressDisplay::draw() {
  std::string s = status_text();
  const std::size_t width = terminal_width() - 1;
  if (s.size() > width) s = s.substr(0, width - 3) + "...";
  std::cout << "\r" << s << "\x1b[K" << std::flush;
  drawn_ = true;
}

void ProgressDisplay::line(std::string_view text) {
  if (verbosity_ == Verbosity::quiet) return;
  if (text.starts_with("ninja: Entering") || text.starts_with("ninja: no work")) return;
  std::lock_guard lock(mu_);
  const std::string counted = compile::short_ninja_line(text);
  if (!command_) {
    // A native build's "[3/8] c++ a.cpp" is the finished step, which step() shows.
    if (!counted.empty()) return;
    print_line(std::string(text));
    return;
  }
  if (verbosity_ == Verbosity::verbose) {
    print_line(std::string(text));
    return;
  }
  if (!counted.empty()) {
    // A command build's own ninja (torch's BuildExtension): on a terminal the status line's detail.
    if (terminal_) {
      detail_ = counted;
      if (!stopped_) draw();
    } else {
      print_line(counted);
    }
    return;
  }
  if (text.starts_with("building '") || text.starts_with("waiting for ") || text.starts_with("opforge: ") ||
      text.starts_with("provisioning ") || text.find("error:") != std::string_view::npos ||
      text.find("Error:") != std::string_view::npos || text.find("Error ") != std::string_view::npos)
    print_line(std::string(text));
}

void ProgressDisplay::step(const compile::StepEvent& e) {
  if (verbosity_ == Verbosity::quiet) return;
  std::lock_guard lock(mu_);
  const auto now = Clock::now();
  total_ = std::max(total_, e.total);
  const std::string counter = "[" + std::to_string(e.done) + "/" + (e.total > 0 ? std::to_string(e.total) : "?") + "]";
  if (e.kind == compile::StepEvent::Kind::started) {
    running_.emplace_back(e.what, now);
    if (terminal_) {
      if (!stopped_) draw();
    } else {
      print_line(counter + " started  " + e.what);
    }
    return;
  }
  done_ = std::max(done_, e.done);
  if (auto it = std::find_if(running_.begin(), running_.end(), [&](auto& r) { return r.first == e.what; });
      it != running_.end())
    running_.erase(it);
  if (running_.empty()) detail_.clear();
  const std::string secs = e.seconds >= 0 ? " (" + seconds_text(e.seconds) + ")" : "";
  if (terminal_) {
    // A step that failed keeps its line; the others are overwritten, as ninja does.
    if (!e.ok) print_line(counter + " FAILED   " + e.what + secs);
    else if (!stopped_) draw();
  } else {
    print_line(counter + (e.ok ? " finished " : " FAILED   ") + e.what + secs);
  }
}

}  // namespace opforge::cli
