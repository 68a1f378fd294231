#include "util/pep440.h"

#include <algorithm>
#include <limits>

#include "util/scan.h"
#include "util/strings.h"

namespace opforge::pep440 {

std::optional<std::string> public_version_error(std::string_view v) {
  if (v.empty()) return "the public part (before '+') is empty";
  scan::Cursor c{v};
  if (c.digits().empty()) return "it must start with a number";
  while (c.rest.size() > 1 && c.rest[0] == '.' && scan::is_digit(c.rest[1])) {
    c.literal(".");
    c.digits();
  }
  if ((c.literal("a") || c.literal("b") || c.literal("rc")) && c.digits().empty())
    return "a pre-release marker needs a number (a1, b2, rc1)";
  if (c.literal(".post") && c.digits().empty()) return "'.post' needs a number";
  if (c.literal(".dev") && c.digits().empty()) return "'.dev' needs a number";
  if (!c.done()) return "unexpected '" + std::string(c.rest) + "'";
  return std::nullopt;
}

std::optional<std::string> local_label_error(std::string_view label) {
  if (label.empty()) return "is empty";
  for (const auto& seg : strings::split(label, '.')) {
    if (seg.empty()) return "has an empty segment";
    for (char c : seg) {
      if (!scan::is_lower(c) && !scan::is_digit(c))
        return "may only hold a-z, 0-9 and '.', not '" + std::string(1, c) + "'";
    }
  }
  return std::nullopt;
}

}  // namespace opforge::pep440

namespace opforge::pep440 {

std::optional<std::vector<int>> release_of(std::string_view version) {
  version = strings::trim(version);
  if (!version.empty() && (version[0] == 'v' || version[0] == 'V')) version.remove_prefix(1);
  scan::Cursor c{version};
  std::vector<int> out;
  for (;;) {
    auto n = c.digits();
    if (n.empty() || n.size() > 9) return std::nullopt;
    out.push_back(std::stoi(std::string(n)));
    if (!(c.rest.size() > 1 && c.rest[0] == '.' && scan::is_digit(c.rest[1]))) break;
    c.literal(".");
  }
  return out;
}

namespace {

/// <0, 0, >0 as `a` sorts before, with or after `b`, missing numbers counting as 0.
int compare_releases(const std::vector<int>& a, const std::vector<int>& b) {
  for (std::size_t i = 0; i < std::max(a.size(), b.size()); ++i) {
    const int x = i < a.size() ? a[i] : 0, y = i < b.size() ? b[i] : 0;
    if (x != y) return x < y ? -1 : 1;
  }
  return 0;
}

std::optional<bool> satisfies_clause(const std::vector<int>& v, std::string_view clause) {
  clause = strings::trim(clause);
  std::string_view op;
  for (std::string_view o : {"===", "~=", "==", "!=", ">=", "<=", ">", "<"})
    if (clause.starts_with(o)) {
      op = o;
      break;
    }
  if (op.empty()) return std::nullopt;
  std::string_view rest = strings::trim(clause.substr(op.size()));
  const bool prefix = rest.ends_with(".*");
  if (prefix) rest.remove_suffix(2);
  auto want = release_of(rest);
  if (!want) return std::nullopt;
  if (prefix) {
    if (op != "==" && op != "!=") return std::nullopt;
    bool same = true;
    for (std::size_t i = 0; i < want->size(); ++i) same = same && (i < v.size() ? v[i] : 0) == (*want)[i];
    return op == "==" ? same : !same;
  }
  const int cmp = compare_releases(v, *want);
  if (op == "==" || op == "===") return cmp == 0;
  if (op == "!=") return cmp != 0;
  if (op == ">=") return cmp >= 0;
  if (op == "<=") return cmp <= 0;
  if (op == ">") return cmp > 0;
  if (op == "<") return cmp < 0;
  // ~=X.Y: >= X.Y and == X.* (the last number dropped); it needs two numbers at least.
  if (want->size() < 2) return std::nullopt;
  for (std::size_t i = 0; i + 1 < want->size(); ++i)
    if ((i < v.size() ? v[i] : 0) != (*want)[i]) return false;
  return cmp >= 0;
}

}  // namespace

namespace {

/// A version taken apart for ordering (PEP 440's "summary of permitted suffixes and relative ordering").
struct Key {
  std::vector<int> release;
  long pre = 0;   ///< (letter rank 0..2) * 2^31 + N; kNone: none
  long post = 0;  ///< N, or -1 for none
  long dev = 0;   ///< N, or kNone for none
  std::vector<std::string> local;
};
constexpr long kNone = std::numeric_limits<long>::max();

std::optional<Key> key_of(std::string_view version) {
  Key k;
  const auto plus = version.find('+');
  const std::string_view pub = version.substr(0, plus);
  if (public_version_error(pub)) return std::nullopt;
  if (plus != std::string_view::npos) {
    if (local_label_error(version.substr(plus + 1))) return std::nullopt;
    k.local = strings::split(version.substr(plus + 1), '.');
  }
  scan::Cursor c{pub};
  auto number = [&c]() -> std::optional<long> {
    auto d = c.digits();
    if (d.empty() || d.size() > 9) return std::nullopt;
    return std::stol(std::string(d));
  };
  for (;;) {
    auto n = number();
    if (!n) return std::nullopt;
    k.release.push_back(static_cast<int>(*n));
    if (!(c.rest.size() > 1 && c.rest[0] == '.' && scan::is_digit(c.rest[1]))) break;
    c.literal(".");
  }
  while (!k.release.empty() && k.release.back() == 0) k.release.pop_back();
  k.pre = kNone;
  k.post = -1;
  k.dev = kNone;
  for (auto [letter, rank] : {std::pair{"rc", 2L}, {"a", 0L}, {"b", 1L}})
    if (c.literal(letter)) {
      auto n = number();
      if (!n) return std::nullopt;
      k.pre = (rank << 31) + *n;
      break;
    }
  if (c.literal(".post")) {
    auto n = number();
    if (!n) return std::nullopt;
    k.post = *n;
  }
  if (c.literal(".dev")) {
    auto n = number();
    if (!n) return std::nullopt;
    k.dev = *n;
  }
  // A dev release of the release itself sorts before its pre-releases.
  if (k.pre == kNone && k.post == -1 && k.dev != kNone) k.pre = -1;
  return k;
}

template <typename T>
int three_way(const T& a, const T& b) {
  return a < b ? -1 : b < a ? 1 : 0;
}

/// Local labels: none first; segment by segment, a number above a word, numbers as numbers.
int compare_local(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  for (std::size_t i = 0; i < std::min(a.size(), b.size()); ++i) {
    const bool an = scan::is_dotted_number(a[i]) && a[i].find('.') == std::string::npos && a[i].size() < 10;
    const bool bn = scan::is_dotted_number(b[i]) && b[i].find('.') == std::string::npos && b[i].size() < 10;
    if (an != bn) return an ? 1 : -1;
    const int c = an ? three_way(std::stol(a[i]), std::stol(b[i])) : three_way(a[i], b[i]);
    if (c) return c;
  }
  return three_way(a.size(), b.size());
}

}  // namespace

std::optional<int> compare(std::string_view a, std::string_view b) {
  auto x = key_of(a), y = key_of(b);
  if (!x || !y) return std::nullopt;
  if (int c = compare_releases(x->release, y->release)) return c;
  if (int c = three_way(x->pre, y->pre)) return c;
  if (int c = three_way(x->post, y->post)) return c;
  if (int c = three_way(x->dev, y->dev)) return c;
  return compare_local(x->local, y->local);
}

std::optional<bool> satisfies(std::string_view version, std::string_view specifiers) {
  auto v = release_of(version);
  if (!v) return std::nullopt;
  bool all = true;
  for (const auto& clause : strings::split(specifiers, ',')) {
    if (strings::trim(clause).empty()) continue;
    auto ok = satisfies_clause(*v, clause);
    if (!ok) return std::nullopt;
    all = all && *ok;
  }
  return all;
}

}  // namespace opforge::pep440
