#include "source/sdist.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>

#include "util/hash.h"
#include "util/strings.h"

namespace opforge::source {

// -I: isolated (no PYTHON* variables, no user site, not the current folder on sys.path), so that
// nothing but the standard library runs. The size bound stops an endless answer before the disk fills.
const char* const kFetchScript = R"py(import sys, urllib.request
url, out, limit = sys.argv[1], sys.argv[2], int(sys.argv[3])
try:
    req = urllib.request.Request(url, headers={"User-Agent": "opforge"})
    with urllib.request.urlopen(req, timeout=60) as r, open(out, "wb") as f:
        done = 0
        while True:
            chunk = r.read(1 << 20)
            if not chunk:
                break
            done += len(chunk)
            if done > limit:
                sys.exit(f"the answer is more than {limit} bytes (the limit for a source archive)")
            f.write(chunk)
except Exception as e:
    sys.exit(f"{type(e).__name__}: {e}")
)py";

namespace {

/// How long a download may take.
constexpr auto kFetchTimeout = std::chrono::minutes(30);

/// The file name a spec ends in, query and fragment cut off: "pkg-1.0.tar.gz".
std::string file_name(const std::string& spec) {
  std::string s = spec;
  if (is_url(s)) s = s.substr(0, s.find_first_of("?#"));
  while (!s.empty() && s.back() == '/') s.pop_back();
  auto slash = s.rfind('/');
  return slash == std::string::npos ? s : s.substr(slash + 1);
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

/// The tree an earlier call unpacked under `tree`: its one folder's name.
std::optional<std::string> unpacked(const probe::FileSystem& files, const fs::path& tree) {
  if (files.type_of(tree) != probe::FileType::directory) return std::nullopt;
  auto names = files.list_directory(tree);
  if (!names || names->size() != 1 || files.type_of(tree / names->front()) != probe::FileType::directory)
    return std::nullopt;
  return names->front();
}

Status check_sha256(const std::string& spec, const std::string& actual, const std::optional<std::string>& expected,
                    const char* removed) {
  if (!expected || lower(*expected) == actual) return {};
  return bad_input(spec + ": sha256 is " + actual + ", but [source] sha256 is " + lower(*expected) + removed,
                   "the archive is not the one the recipe pins: if it changed on purpose (a new release), put its "
                   "sha256 in the recipe; otherwise do not build from it");
}

/// Downloads `url` into `entry`, renamed to `archive` once its sha256 is the pinned one.
Result<std::string> download(probe::Machine m, const std::string& url, const std::string& sha256, const fs::path& entry,
                             const fs::path& archive, const ArchiveLimits& limits) {
  OPFORGE_CHECK(m.fs.create_directories(entry));
  const fs::path part = entry / (archive.filename().string() + ".part-" + std::to_string(::getpid()));
  auto ran = m.proc.run(probe::Command{
      .argv = {"python3", "-I", "-c", kFetchScript, url, part.string(), std::to_string(limits.archive_bytes)},
      .cwd = entry,
      .timeout = kFetchTimeout});
  if (!ran || !ran->ok()) {
    (void)m.fs.remove(part);
    std::string why = !ran             ? ran.error().message
                      : ran->timed_out ? "no answer within " + std::to_string(kFetchTimeout.count()) + " minutes"
                                       : std::string(strings::trim(ran->err.empty() ? ran->out : ran->err));
    auto lines = strings::split(why, '\n');
    return unsatisfied("cannot download " + url + ": " + strings::cut(lines.empty() ? why : lines.back()),
                       "check the URL and the network (python3's urllib fetches it, with the proxy variables it "
                       "reads), or download the archive yourself and give its path: sdist = \"./" +
                           archive.filename().string() + "\"");
  }
  auto bytes = m.fs.read_file(part, limits.archive_bytes);
  if (!bytes) {
    (void)m.fs.remove(part);
    return opforge::unexpected(bytes.error());
  }
  if (auto ok = check_sha256(url, sha256_hex(*bytes), sha256, " (the download is removed)"); !ok) {
    (void)m.fs.remove(part);
    return opforge::unexpected(ok.error());
  }
  if (auto moved = m.fs.rename(part, archive); !moved) {
    (void)m.fs.remove(part);
    return opforge::unexpected(moved.error());
  }
  return std::move(*bytes);
}

}  // namespace

bool is_url(std::string_view spec) { return spec.starts_with("https://") || spec.starts_with("http://"); }

bool is_sha256(std::string_view text) {
  return text.size() == 64 && std::all_of(text.begin(), text.end(), [](unsigned char c) { return std::isxdigit(c); });
}

std::string sdist_key(const std::string& spec, const std::string& sha256) {
  std::string stem = file_name(spec);
  for (const char* suffix : {".tar.gz", ".tgz", ".tar.bz2", ".tar.xz", ".tar"})
    if (stem.size() > std::string_view(suffix).size() && stem.ends_with(suffix)) {
      stem.resize(stem.size() - std::string_view(suffix).size());
      break;
    }
  std::string name;
  for (char c : stem)
    name += (std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.') ? c : '_';
  if (name.empty() || name.starts_with(".")) name = "sdist" + name;
  if (name.size() > 80) name.resize(80);
  return name + "-" + lower(sha256).substr(0, 16);
}

std::optional<fs::path> sdist_entry(const std::string& spec, const std::optional<std::string>& sha256,
                                    const fs::path& sdists_dir) {
  if (!is_url(spec) || !sha256 || !is_sha256(*sha256)) return std::nullopt;
  return sdists_dir / sdist_key(spec, *sha256);
}

bool in_cache(const probe::FileSystem& files, const std::string& spec, const fs::path& entry) {
  return unpacked(files, entry / "tree") || files.type_of(entry / file_name(spec)) == probe::FileType::regular;
}

Result<Sdist> fetch_sdist(probe::Machine m, const std::string& spec, const std::optional<std::string>& sha256,
                          const fs::path& sdists_dir, const ArchiveLimits& limits) {
  if (sha256 && !is_sha256(*sha256))
    return bad_input("[source] sha256 = \"" + strings::cut(*sha256) + "\" is not 64 hex digits");
  Sdist out;
  std::string bytes;
  const bool url = is_url(spec);
  if (url) {
    if (!sha256)
      return bad_input("[source] sdist = \"" + strings::cut(spec) + "\" is a URL without sha256",
                       "pin the archive: sha256 = \"<64 hex digits>\" (PyPI shows it beside each file)");
    out.sha256 = lower(*sha256);
    out.entry = sdists_dir / sdist_key(spec, out.sha256);
    if (auto top = unpacked(m.fs, out.entry / "tree")) {
      out.root = out.entry / "tree" / *top;
      out.reused = true;
      return out;
    }
    const fs::path archive = out.entry / file_name(spec);
    if (m.fs.type_of(archive) == probe::FileType::regular) {
      bytes = OPFORGE_TRY(m.fs.read_file(archive, limits.archive_bytes));
      // The kept download was checked when it was made; a changed one is not used.
      if (auto ok = check_sha256(archive.string(), sha256_hex(bytes), out.sha256, " (it is removed)"); !ok) {
        (void)m.fs.remove(archive);
        return opforge::unexpected(ok.error());
      }
    } else {
      bytes = OPFORGE_TRY(download(m, spec, out.sha256, out.entry, archive, limits));
      out.downloaded = true;
    }
  } else {
    auto read = m.fs.read_file(spec, limits.archive_bytes);
    if (!read)
      return bad_input("[source] sdist: " + read.error().message,
                       "give the path of a project's source archive (.tar.gz), relative to the recipe's folder");
    bytes = std::move(*read);
    out.sha256 = sha256_hex(bytes);
    OPFORGE_CHECK(check_sha256(spec, out.sha256, sha256, ""));
    out.entry = sdists_dir / sdist_key(spec, out.sha256);
    if (auto top = unpacked(m.fs, out.entry / "tree")) {
      out.root = out.entry / "tree" / *top;
      out.reused = true;
      return out;
    }
  }

  const bool made_entry = m.fs.type_of(out.entry) == probe::FileType::none;
  OPFORGE_CHECK(m.fs.create_directories(out.entry));
  const fs::path tmp = out.entry / ("tree.tmp-" + std::to_string(::getpid()));
  (void)m.fs.remove_all(tmp);
  auto top = unpack(m.fs, bytes, spec, tmp, limits);
  if (!top) {
    // A refused archive leaves nothing: its download goes too.
    if (made_entry || out.downloaded) (void)m.fs.remove_all(out.entry);
    return opforge::unexpected(top.error());
  }
  // Another build may have put its tree in place first: then that one is used.
  if (auto moved = m.fs.rename(tmp, out.entry / "tree"); !moved) {
    (void)m.fs.remove_all(tmp);
    if (!unpacked(m.fs, out.entry / "tree"))
      return failure("cannot move the unpacked " + spec + " into " + (out.entry / "tree").string() + ": " +
                     moved.error().message);
  }
  out.root = out.entry / "tree" / *top;
  (void)probe::record_size(m.fs, out.entry, probe::tree_bytes(m.fs, out.entry));
  return out;
}

}  // namespace opforge::source
