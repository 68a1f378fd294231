// The text files of a wheel's .dist-info: METADATA and WHEEL (email-style headers) and RECORD's
// hashes (sha256, urlsafe base64 without padding, PEP 376/427).
#include <algorithm>

#include "opforge/version.h"
#include "util/hash.h"
#include "util/strings.h"
#include "wheel/internal.h"

namespace opforge::wheel {

std::string urlsafe_b64_nopad(std::string_view raw) {
  static constexpr char kTable[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  std::string out;
  // Each group of up to 3 bytes gives one character more than it has bytes: no '=' padding.
  for (std::size_t i = 0; i < raw.size(); i += 3) {
    const std::size_t n = std::min<std::size_t>(3, raw.size() - i);
    unsigned v = 0;
    for (std::size_t k = 0; k < 3; ++k) v = (v << 8) | (k < n ? static_cast<unsigned char>(raw[i + k]) : 0u);
    for (std::size_t k = 0; k <= n; ++k) out += kTable[(v >> (18 - 6 * k)) & 63];
  }
  return out;
}

std::string record_hash(std::string_view content) { return "sha256=" + urlsafe_b64_nopad(sha256_raw(content)); }

std::string record_text(const std::vector<File>& files, const std::string& dist_info) {
  std::string record;
  for (const auto& f : files)
    record += f.path + "," + record_hash(f.content) + "," + std::to_string(f.content.size()) + "\n";
  return record + dist_info + "RECORD,,\n";  // RECORD cannot hold its own hash
}

std::string metadata_text(const Spec& spec) {
  std::string m;
  m += "Metadata-Version: 2.1\n";
  m += "Name: " + spec.name + "\n";
  m += "Version: " + spec.version + "\n";
  if (!spec.summary.empty()) m += "Summary: " + spec.summary + "\n";
  if (!spec.requires_python.empty()) m += "Requires-Python: " + spec.requires_python + "\n";
  m += "Description-Content-Type: text/markdown\n";
  m += "\n";
  std::string body = spec.description.empty()
                         ? "# " + spec.name + "\n\n" + (spec.summary.empty() ? spec.name : spec.summary) + "\n"
                         : spec.description;
  if (body.back() != '\n') body += '\n';
  return m + body;
}

std::string wheel_text(const std::vector<std::string>& tags) {
  std::string w = "Wheel-Version: 1.0\n";
  w += std::string("Generator: opforge ") + kVersion + "\n";
  w += "Root-Is-Purelib: false\n";
  for (const auto& t : tags) w += "Tag: " + t + "\n";
  return w;
}

namespace {

std::vector<std::string_view> header_lines(std::string_view text) {
  std::vector<std::string_view> out;
  std::size_t start = 0;
  while (start < text.size()) {
    auto nl = text.find('\n', start);
    auto line = text.substr(start, nl == std::string_view::npos ? std::string_view::npos : nl - start);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty()) break;  // headers end at the first blank line
    out.push_back(line);
    if (nl == std::string_view::npos) break;
    start = nl + 1;
  }
  return out;
}

}  // namespace

std::vector<std::string> header_values(std::string_view text, std::string_view key) {
  std::vector<std::string> out;
  for (auto line : header_lines(text)) {
    auto colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    if (strings::to_lower(strings::trim(line.substr(0, colon))) == strings::to_lower(key))
      out.emplace_back(strings::trim(line.substr(colon + 1)));
  }
  return out;
}

std::optional<std::string> header_value(std::string_view text, std::string_view key) {
  auto values = header_values(text, key);
  if (values.empty()) return std::nullopt;
  return values.front();
}

}  // namespace opforge::wheel
