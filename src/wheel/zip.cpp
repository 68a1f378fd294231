// Zip archives: writing a wheel's entries with fixed times, modes and compression, and reading an
// untrusted archive within limits.
#include <sys/stat.h>
#include <zip.h>

#include <algorithm>
#include <cstring>
#include <ctime>
#include <memory>

#include "util/hash.h"
#include "wheel/internal.h"

namespace opforge::wheel {

std::pair<std::uint16_t, std::uint16_t> dos_time_date(std::int64_t epoch) {
  // DOS time has no zone; opforge writes the UTC fields so that the bytes never depend on TZ.
  constexpr std::int64_t k2107 = 4354819198;  // 2107-12-31 23:59:58, the last DOS time
  epoch = std::clamp(epoch, kMinEpoch, k2107);
  std::time_t t = static_cast<std::time_t>(epoch);
  std::tm tm{};
  gmtime_r(&t, &tm);
  auto time = static_cast<std::uint16_t>((tm.tm_hour << 11) | (tm.tm_min << 5) | (tm.tm_sec / 2));
  auto date = static_cast<std::uint16_t>(((tm.tm_year + 1900 - 1980) << 9) | ((tm.tm_mon + 1) << 5) | tm.tm_mday);
  return {time, date};
}

namespace {

std::uint32_t get32(const std::string& b, std::size_t at) {
  std::uint32_t v;
  std::memcpy(&v, b.data() + at, 4);
  return v;
}
std::uint16_t get16(const std::string& b, std::size_t at) {
  std::uint16_t v;
  std::memcpy(&v, b.data() + at, 2);
  return v;
}
void put16(std::string& b, std::size_t at, std::uint16_t v) { std::memcpy(b.data() + at, &v, 2); }

// libzip converts times through the local zone (mktime/localtime); rewriting the fields in
// place afterwards is the only way to be independent of TZ and of DST gaps. The fields are not
// covered by any CRC.
Status patch_dos_times(std::string& zip, std::uint16_t time, std::uint16_t date) {
  if (zip.size() < 22) return failure("zip archive too short");
  std::size_t eocd = std::string::npos;
  for (std::size_t i = zip.size() - 22 + 1; i-- > 0;) {
    if (get32(zip, i) == 0x06054b50u) {
      eocd = i;
      break;
    }
    if (zip.size() - i > 22 + 65535) break;
  }
  if (eocd == std::string::npos) return failure("zip archive has no end of central directory");
  std::size_t count = get16(zip, eocd + 10);
  std::size_t cd = get32(zip, eocd + 16);
  for (std::size_t k = 0; k < count; ++k) {
    if (cd + 46 > zip.size() || get32(zip, cd) != 0x02014b50u) return failure("zip central directory is malformed");
    put16(zip, cd + 12, time);
    put16(zip, cd + 14, date);
    std::size_t local = get32(zip, cd + 42);
    if (local + 30 > zip.size() || get32(zip, local) != 0x04034b50u) return failure("zip local header is malformed");
    put16(zip, local + 10, time);
    put16(zip, local + 12, date);
    cd += 46 + get16(zip, cd + 28) + get16(zip, cd + 30) + get16(zip, cd + 32);
  }
  return {};
}

struct ZipCloser {
  void operator()(zip_t* z) const {
    if (z) zip_discard(z);
  }
};

std::string zip_error_text(zip_error_t* err) { return zip_error_strerror(err); }

}  // namespace

Result<std::string> zip_entries(const std::vector<File>& ordered, std::int64_t epoch) {
  zip_error_t err;
  zip_error_init(&err);
  zip_source_t* store = zip_source_buffer_create(nullptr, 0, 0, &err);
  if (!store) return failure("libzip: " + zip_error_text(&err));
  zip_source_keep(store);
  std::unique_ptr<zip_source_t, void (*)(zip_source_t*)> store_guard(store, zip_source_free);
  std::unique_ptr<zip_t, ZipCloser> za(zip_open_from_source(store, ZIP_TRUNCATE, &err));
  if (!za) return failure("libzip: " + zip_error_text(&err));

  auto [dtime, ddate] = dos_time_date(epoch);
  for (const auto& f : ordered) {
    zip_source_t* src = zip_source_buffer(za.get(), f.content.data(), f.content.size(), 0);
    if (!src) return failure("libzip: " + std::string(zip_strerror(za.get())));
    zip_int64_t idx = zip_file_add(za.get(), f.path.c_str(), src, ZIP_FL_ENC_UTF_8);
    if (idx < 0) {
      zip_source_free(src);
      return failure("libzip: cannot add " + f.path + ": " + zip_strerror(za.get()));
    }
    auto i = static_cast<zip_uint64_t>(idx);
    unsigned mode = (f.mode & 0111) ? 0755 : 0644;
    if (zip_set_file_compression(za.get(), i, ZIP_CM_DEFLATE, 9) != 0 ||
        zip_file_set_external_attributes(za.get(), i, 0, ZIP_OPSYS_UNIX,
                                         static_cast<zip_uint32_t>(S_IFREG | mode) << 16) != 0 ||
        zip_file_set_dostime(za.get(), i, dtime, ddate, 0) != 0)
      return failure("libzip: cannot set attributes of " + f.path + ": " + zip_strerror(za.get()));
    // Nothing but the name: no extended timestamps or uid/gid fields.
    zip_file_extra_field_delete(za.get(), i, ZIP_EXTRA_FIELD_ALL, ZIP_FL_CENTRAL | ZIP_FL_LOCAL);
  }
  if (zip_close(za.get()) != 0) return failure("libzip: " + std::string(zip_strerror(za.get())));
  (void)za.release();  // zip_close freed it

  if (zip_source_open(store) != 0) return failure("libzip: cannot reopen the archive buffer");
  zip_source_seek(store, 0, SEEK_END);
  zip_int64_t size = zip_source_tell(store);
  zip_source_seek(store, 0, SEEK_SET);
  std::string bytes(static_cast<std::size_t>(size < 0 ? 0 : size), '\0');
  zip_int64_t got = zip_source_read(store, bytes.data(), bytes.size());
  zip_source_close(store);
  if (got != size) return failure("libzip: cannot read the archive back");
  OPFORGE_CHECK(patch_dos_times(bytes, dtime, ddate));
  return bytes;
}

namespace {

std::string mib(std::uint64_t bytes) {
  if (bytes >= (1ull << 30) && bytes % (1ull << 30) == 0) return std::to_string(bytes >> 30) + " GiB";
  return std::to_string(bytes) + " bytes";
}

bool in_dist_info(std::string_view path) {
  const std::string_view folder = dist_info_of(path);
  return !folder.empty() && path.find('/', folder.size() + 1) == std::string_view::npos;
}

using ZipPtr = std::unique_ptr<zip_t, ZipCloser>;

Result<ZipPtr> open_archive(std::string_view bytes, const Limits& limits) {
  if (bytes.size() > limits.archive_bytes)
    return bad_input("the archive is " + std::to_string(bytes.size()) + " bytes, more than the limit of " +
                     mib(limits.archive_bytes));
  // libzip opens an empty buffer as an empty archive; a file too short for the end-of-central-
  // directory record is no archive at all.
  if (bytes.size() < 22)
    return bad_input("not a zip archive (" + std::to_string(bytes.size()) + " bytes; even an empty zip has 22)");
  zip_error_t err;
  zip_error_init(&err);
  zip_source_t* src = zip_source_buffer_create(bytes.data(), bytes.size(), 0, &err);
  if (!src) return bad_input("not a zip archive: " + zip_error_text(&err));
  zip_t* raw = zip_open_from_source(src, ZIP_RDONLY | ZIP_CHECKCONS, &err);
  if (!raw) {
    zip_source_free(src);
    return bad_input("not a valid zip archive: " + zip_error_text(&err));
  }
  return ZipPtr(raw);
}

Result<zip_stat_t> stat_entry(zip_t* za, zip_uint64_t i) {
  zip_stat_t st;
  zip_stat_init(&st);
  if (zip_stat_index(za, i, 0, &st) != 0) return bad_input("cannot read zip entry " + std::to_string(i));
  return st;
}

/// Every declared size is checked before anything is inflated; read_entry then stops at the
/// declared size (libzip checks the CRC at the end), so no entry can grow past what was checked.
Status check_declared_sizes(zip_t* za, zip_uint64_t n, std::uint64_t archive_size, const Limits& limits) {
  std::uint64_t total = 0;
  for (zip_uint64_t k = 0; k < n; ++k) {
    zip_stat_t st = OPFORGE_TRY(stat_entry(za, k));
    std::string name = (st.valid & ZIP_STAT_NAME) && st.name ? st.name : "#" + std::to_string(k);
    if (!(st.valid & ZIP_STAT_SIZE) || !(st.valid & ZIP_STAT_COMP_SIZE))
      return bad_input("zip entry " + name + " has no size");
    if (st.size > limits.entry_bytes)
      return bad_input("zip entry " + name + " declares " + std::to_string(st.size) +
                       " bytes, more than the limit of " + mib(limits.entry_bytes) + " for one file");
    total += st.size;
    if (total > limits.total_bytes)
      return bad_input("the archive's entries add up to more than the limit of " + mib(limits.total_bytes));
    if (st.size > (1u << 20) && st.size / std::max<zip_uint64_t>(st.comp_size, 1) > limits.ratio)
      return bad_input("zip entry " + name + " inflates " + std::to_string(st.comp_size) + " bytes to " +
                       std::to_string(st.size) + ", more than " + std::to_string(limits.ratio) +
                       " times (a zip bomb?)");
  }
  // Many entries can share one compressed stream (overlapping entries): the whole archive's
  // ratio bounds that too.
  if (total > (1u << 20) && total / archive_size > limits.ratio)
    return bad_input("the archive's " + std::to_string(archive_size) + " bytes inflate to " + std::to_string(total) +
                     ", more than " + std::to_string(limits.ratio) + " times (a zip bomb?)");
  return {};
}

/// Streams an entry's bytes through sha256, keeping them when `keep` asks for them.
Status inflate(zip_t* za, zip_uint64_t i, std::uint64_t declared, Keep keep, Entry& e, std::vector<char>& buf) {
  zip_file_t* zf = zip_fopen_index(za, i, 0);
  if (!zf) return bad_input("cannot open zip entry " + e.path + ": " + zip_strerror(za));
  std::unique_ptr<zip_file_t, int (*)(zip_file_t*)> closer(zf, zip_fclose);
  Sha256 md;
  bool kept = keep == Keep::all || in_dist_info(e.path);
  for (bool first = true;; first = false) {
    zip_int64_t got = zip_fread(zf, buf.data(), buf.size());
    if (got < 0) return bad_input("cannot read zip entry " + e.path + " (corrupt data)");
    if (got == 0) break;
    std::string_view chunk(buf.data(), static_cast<std::size_t>(got));
    if (first && keep == Keep::dist_info_and_elf && is_elf(chunk)) kept = true;
    e.size += chunk.size();
    if (e.size > declared)  // libzip stops at the declared size; this is a second fence
      return bad_input("zip entry " + e.path + " holds more than its declared " + std::to_string(declared) + " bytes");
    md.update(chunk);
    if (kept) e.content.append(chunk);
  }
  if (e.size != declared) return bad_input("cannot read zip entry " + e.path + " (corrupt data)");
  e.sha256 = md.finish_raw();
  return {};
}

Result<Entry> read_entry(zip_t* za, zip_uint64_t i, Keep keep, std::vector<char>& buf) {
  Entry e;
  const char* name = zip_get_name(za, i, ZIP_FL_ENC_RAW);
  e.path = name ? name : "";
  zip_uint8_t opsys = 0;
  zip_uint32_t attr = 0;
  zip_file_get_external_attributes(za, i, 0, &opsys, &attr);
  if (opsys == ZIP_OPSYS_UNIX) e.mode = attr >> 16;
  e.is_symlink = opsys == ZIP_OPSYS_UNIX && S_ISLNK(e.mode);
  e.is_directory = !e.path.empty() && e.path.back() == '/';
  zip_stat_t st;
  if (zip_stat_index(za, i, 0, &st) != 0) return bad_input("cannot read zip entry " + e.path);
  if (e.is_directory) e.sha256 = sha256_raw("");
  else OPFORGE_CHECK(inflate(za, i, st.size, keep, e, buf));
  return e;
}

}  // namespace

Result<std::vector<Entry>> read_archive(std::string_view bytes, Keep keep, const Limits& limits) {
  auto za = OPFORGE_TRY(open_archive(bytes, limits));
  zip_int64_t n = zip_get_num_entries(za.get(), 0);
  if (n < 0 || static_cast<std::uint64_t>(n) > limits.entries)
    return bad_input("the archive has " + std::to_string(n) + " entries, more than the limit of " +
                     std::to_string(limits.entries));
  const auto count = static_cast<zip_uint64_t>(n);
  OPFORGE_CHECK(check_declared_sizes(za.get(), count, bytes.size(), limits));
  std::vector<Entry> out;
  std::vector<char> buf(1 << 16);
  for (zip_uint64_t i = 0; i < count; ++i) out.push_back(OPFORGE_TRY(read_entry(za.get(), i, keep, buf)));
  return out;
}

}  // namespace opforge::wheel
