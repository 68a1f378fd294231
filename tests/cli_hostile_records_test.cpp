// The hostile-input table for build records, wheels and the verify/inspect flags: the real opforge
// binary, each hostile file with its exit code and message, and after each run a check that
// nothing was written outside the case's folder (TMPDIR and HOME point into it and must stay
// empty) and nothing was left half-written.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zip.h>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <set>
#include <string>

#include "test_util.h"
#include "util/hash.h"
#include "wheel/wheel.h"

namespace {

namespace fs = std::filesystem;
using opforge::test_util::slurp;
using opforge::test_util::spit;

// ------------------------------------------------------------------------------ inputs

/// A record as opforge writes it, with `inputs` spliced in as JSON text.
std::string record_json(const std::string& inputs, const std::string& wheel = "\"w-1.0-py3-none-any.whl\"",
                        const std::string& format = "\"opforge-build-record/1\"") {
  return "{\"format\": " + format + ", \"wheel\": " + wheel + ", \"inputs\": " + inputs +
         ", \"outputs\": {\"w-1.0-py3-none-any.whl\": \"00\"}}\n";
}

/// A recipe whose build command would leave `pwned` in the case folder, and a record naming it
/// with the recipe's true sha256 (a hand-written record can always get that right).
void command_recipe_and_record(const fs::path& dir, const std::string& recipe_sha = "") {
  std::string recipe = opforge::test_util::fixture_source() +
                       "[build]\nbackend = \"command\"\ncommand = [\"sh\", \"-c\", \"touch " +
                       (dir / "pwned").string() + "\"]\n";
  spit(dir / "r.toml", recipe);
  std::string sha = recipe_sha.empty() ? opforge::sha256_hex(recipe) : recipe_sha;
  spit(dir / "r.json", record_json("{\"recipe\": {\"path\": \"" + (dir / "r.toml").string() + "\", \"sha256\": \"" +
                                   sha + "\"}, \"command\": [\"sh\"]}"));
}

std::uint32_t crc32(std::string_view data) {
  std::uint32_t c = 0xFFFFFFFFu;
  for (unsigned char b : data) {
    c ^= b;
    for (int k = 0; k < 8; ++k) c = (c >> 1) ^ (0xEDB88320u & (0u - (c & 1u)));
  }
  return ~c;
}

void put(std::string& out, std::uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out += static_cast<char>((v >> (8 * i)) & 0xFF);
}

/// One deflated entry whose headers declare `declared` uncompressed bytes (ZIP64 fields when it
/// does not fit 32 bits): the archive is tiny whatever it claims.
std::string zip_declaring(const std::string& name, std::uint64_t declared) {
  const std::string data("\x03\x00", 2);  // an empty deflate stream
  const bool z64 = declared >= 0xFFFFFFFFu;
  std::string extra;
  if (z64) {
    put(extra, 0x0001, 2);
    put(extra, 16, 2);
    put(extra, declared, 8);
    put(extra, data.size(), 8);
  }
  std::string z;
  put(z, 0x04034b50, 4);
  put(z, z64 ? 45 : 20, 2);
  put(z, 0, 2);
  put(z, 8, 2);
  put(z, 0, 4);  // time, date
  put(z, crc32(""), 4);
  put(z, z64 ? 0xFFFFFFFFu : data.size(), 4);
  put(z, z64 ? 0xFFFFFFFFu : declared, 4);
  put(z, name.size(), 2);
  put(z, extra.size(), 2);
  z += name + extra + data;
  std::size_t cd = z.size();
  put(z, 0x02014b50, 4);
  put(z, (3 << 8) | 45, 2);
  put(z, z64 ? 45 : 20, 2);
  put(z, 0, 2);
  put(z, 8, 2);
  put(z, 0, 4);
  put(z, crc32(""), 4);
  put(z, z64 ? 0xFFFFFFFFu : data.size(), 4);
  put(z, z64 ? 0xFFFFFFFFu : declared, 4);
  put(z, name.size(), 2);
  put(z, extra.size(), 2);
  put(z, 0, 2);
  put(z, 0, 2);
  put(z, 0, 2);
  put(z, 0100644u << 16, 4);
  put(z, 0, 4);
  z += name + extra;
  std::size_t cd_size = z.size() - cd;
  put(z, 0x06054b50, 4);
  put(z, 0, 4);
  put(z, 1, 2);
  put(z, 1, 2);
  put(z, cd_size, 4);
  put(z, cd, 4);
  put(z, 0, 2);
  return z;
}

/// A real zip (libzip, deflate) of `count` entries of `size` zero bytes each.
/// A zip of `count` empty stored files (e/0000000 ...), with the zip64 end records that an
/// archive of more than 65535 entries needs. 100,001 entries make 9 MB, written in milliseconds.
void zip_of_empty_files(const fs::path& path, std::uint64_t count) {
  std::string z, cd;
  z.reserve(count * 40);
  cd.reserve(count * 56);
  char name[24];  // "e/" and up to 20 digits: gcc checks the whole range at -O0
  for (std::uint64_t i = 0; i < count; ++i) {
    std::snprintf(name, sizeof name, "e/%07llu", static_cast<unsigned long long>(i));
    const std::size_t offset = z.size();
    put(z, 0x04034b50, 4);
    put(z, 20, 2);
    put(z, 0, 2);
    put(z, 0, 2);  // stored
    put(z, 0, 4);
    put(z, 0, 4);  // crc32 of nothing
    put(z, 0, 4);
    put(z, 0, 4);
    put(z, 9, 2);
    put(z, 0, 2);
    z.append(name, 9);
    put(cd, 0x02014b50, 4);
    put(cd, (3 << 8) | 20, 2);
    put(cd, 20, 2);
    put(cd, 0, 2);
    put(cd, 0, 2);
    put(cd, 0, 4);
    put(cd, 0, 4);
    put(cd, 0, 4);
    put(cd, 0, 4);
    put(cd, 9, 2);
    put(cd, 0, 2);
    put(cd, 0, 2);
    put(cd, 0, 2);
    put(cd, 0, 2);
    put(cd, 0100644u << 16, 4);
    put(cd, offset, 4);
    cd.append(name, 9);
  }
  const std::uint64_t cd_offset = z.size();
  z += cd;
  const std::uint64_t eocd64 = z.size();
  put(z, 0x06064b50, 4);  // zip64 end of central directory
  put(z, 44, 8);
  put(z, 45, 2);
  put(z, 45, 2);
  put(z, 0, 4);
  put(z, 0, 4);
  put(z, count, 8);
  put(z, count, 8);
  put(z, cd.size(), 8);
  put(z, cd_offset, 8);
  put(z, 0x07064b50, 4);  // its locator
  put(z, 0, 4);
  put(z, eocd64, 8);
  put(z, 1, 4);
  put(z, 0x06054b50, 4);
  put(z, 0, 4);
  put(z, 0xFFFF, 2);
  put(z, 0xFFFF, 2);
  put(z, 0xFFFFFFFFu, 4);
  put(z, 0xFFFFFFFFu, 4);
  put(z, 0, 2);
  spit(path, z);
}

void zip_of_zeros(const fs::path& path, std::size_t size, int count = 1) {
  std::string zeros(size, '\0');
  int err = 0;
  zip_t* za = zip_open(path.c_str(), ZIP_CREATE | ZIP_TRUNCATE, &err);
  ASSERT_NE(za, nullptr);
  for (int i = 0; i < count; ++i) {
    zip_source_t* src = zip_source_buffer(za, zeros.data(), zeros.size(), 0);
    ASSERT_GE(zip_file_add(za, ("z/" + std::to_string(i)).c_str(), src, 0), 0);
  }
  ASSERT_EQ(zip_close(za), 0);
}

/// A valid wheel made by opforge's own writer.
std::string good_wheel() {
  opforge::wheel::Spec spec;
  spec.name = "w";
  spec.version = "1.0";
  spec.files = {{"w/__init__.py", "", 0644}};
  return opforge::wheel::pack(spec).value().bytes;
}

/// A wheel to check and a node report (the H200 node's `doctor --json`) whose node.format is
/// `format`; "" leaves the report as it is, `whole` replaces it.
std::function<void(const fs::path&)> wheel_and_report(std::string format, std::string whole = "") {
  return [format, whole](const fs::path& dir) {
    spit(dir / "w-1.0-py3-none-any.whl", good_wheel());
    std::string text = slurp(fs::path(OPFORGE_TEST_DATA) / "nodes/doctor_h200.json");
    const auto at = text.find("\"format\": 1,");
    ASSERT_NE(at, std::string::npos);
    if (!format.empty()) text.replace(at, 12, "\"format\": " + format + ",");
    spit(dir / "n.json", whole.empty() ? text : whole);
  };
}

/// 50,000 nested arrays around a \udce9 escape (a form opforge writes): 100 KB.
std::string deep_json() { return std::string(50000, '[') + "\"\\udce9\"" + std::string(50000, ']'); }

// ------------------------------------------------------------------------------ the table

struct Case {
  const char* name;
  std::function<void(const fs::path& dir)> setup;
  const char* args;  ///< after `opforge`, run in the case folder
  int exit_code;
  const char* expected;           ///< a stable part of stderr
  const char* expected_out = "";  ///< a stable part of stdout ("" : stdout is empty)
};

auto text_file(const char* name, std::string text) {
  return [name, text](const fs::path& dir) { spit(dir / name, text); };
}
auto record_file(std::string text) { return text_file("r.json", std::move(text)); }

const Case kRecordCases[] = {
    // ---- build records: not records at all
    {"record_empty", record_file(""), "verify r.json", 2, "r.json: not an opforge build record (not a JSON object)"},
    {"record_text", record_file("hello"), "verify r.json", 2,
     "r.json: not an opforge build record (not a JSON object)"},
    {"record_array", record_file("[1, 2]"), "verify r.json", 2,
     "r.json: not an opforge build record (not a JSON object)"},
    {"record_no_format", record_file("{\"wheel\": \"w.whl\"}"), "verify r.json", 2,
     "r.json: not an opforge build record (no \"format\": \"opforge-build-record/N\")"},
    {"record_format_number", record_file(record_json("{}", "\"w.whl\"", "1")), "verify r.json", 2,
     "r.json: not an opforge build record (no \"format\""},
    {"record_format_garbage", record_file(record_json("{}", "\"w.whl\"", "\"opforge-build-record/1x\"")),
     "verify r.json", 2, "r.json: not an opforge build record (no \"format\""},
    {"record_format_leading_zero", record_file(record_json("{}", "\"w.whl\"", "\"opforge-build-record/01\"")),
     "verify r.json", 2, "r.json: not an opforge build record (no \"format\""},
    {"record_newer_version", record_file(record_json("{}", "\"w.whl\"", "\"opforge-build-record/7\"")), "verify r.json",
     2,
     "r.json: build record format version 7 is newer than this opforge reads (version 1)\n"
     "  hint: verify it with the opforge release that wrote it, or a newer one"},
    // ---- build records: wrong types, by field path
    {"record_wheel_number", record_file(record_json("{}", "5")), "verify r.json", 2,
     "r.json: field 'wheel' must be a string, not a number"},
    {"record_wheel_folder", record_file(record_json("{}", "\"../../etc/w.whl\"")), "verify r.json", 2,
     "r.json: field 'wheel' must name a wheel file (no folder)"},
    {"record_inputs_array", record_file(record_json("[1]")), "verify r.json", 2,
     "r.json: field 'inputs' must be an object, not an array"},
    {"record_release_string", record_file(record_json("{\"source\": {\"release\": \"yes\"}}")), "verify r.json", 2,
     "r.json: field 'inputs.source.release' must be true or false, not a string"},
    {"record_commit_number", record_file(record_json("{\"source\": {\"commit\": 12345}}")), "verify r.json", 2,
     "r.json: field 'inputs.source.commit' must be a string, not a number"},
    {"record_recipe_string", record_file(record_json("{\"recipe\": \"r.toml\"}")), "verify r.json", 2,
     "r.json: field 'inputs.recipe' must be an object, not a string"},
    {"record_env_value_array", record_file(record_json("{\"environment\": {\"DS_BUILD_X\": []}}")), "verify r.json", 2,
     "r.json: field 'inputs.environment.DS_BUILD_X' must be a string, not an array"},
    {"record_env_ld_preload", record_file(record_json("{\"environment\": {\"LD_PRELOAD\": \"/tmp/evil.so\"}}")),
     "verify r.json", 2,
     "r.json: field 'inputs.environment.LD_PRELOAD' is not a variable opforge records (DS_*, TORCH_CUDA_ARCH_LIST, "
     "CUDA_HOME, CUDA_PATH, SOURCE_DATE_EPOCH, MAX_JOBS, CFLAGS, CXXFLAGS, LDFLAGS, NVCC_APPEND_FLAGS, "
     "NVCC_PREPEND_FLAGS, CMAKE_ARGS, SKBUILD_*)"},
    {"record_command_number", record_file(record_json("{\"command\": [\"sh\", 1]}")), "verify r.json", 2,
     "r.json: field 'inputs.command[1]' must be a string, not a number"},
    {"record_outputs_null",
     record_file("{\"format\": \"opforge-build-record/1\", \"wheel\": \"w.whl\", \"outputs\": {\"w.whl\": null}}"),
     "verify r.json", 2, "r.json: field 'outputs.w.whl' must be a string, not null"},
    // ---- build records: size and depth
    {"record_deep_nesting", record_file(std::string(60000, '[') + std::string(60000, ']')), "verify r.json", 2,
     "r.json: nested deeper than a build record can be (more than 32 levels)"},
    {"record_too_large", record_file(std::string(5 * 1024 * 1024, ' ')), "verify r.json", 2,
     "r.json: is 5242880 bytes, more than the limit of 4194304"},
    {"record_fifo", [](const fs::path& dir) { ASSERT_EQ(::mkfifo((dir / "r.json").c_str(), 0644), 0); },
     "verify r.json", 2, "r.json: is a FIFO, not a regular file"},
    {"record_dev_zero", [](const fs::path& dir) { fs::create_symlink("/dev/zero", dir / "r.json"); }, "verify r.json",
     2, "r.json: is a character device, not a regular file"},
    {"record_directory", [](const fs::path& dir) { fs::create_directory(dir / "r.json"); }, "verify r.json", 2,
     "r.json: is a directory, not a regular file"},
    {"release_of_bad_record", record_file(record_json("{\"source\": {\"release\": 1}}")),
     "build nope.toml --release-of r.json", 2,
     "r.json: field 'inputs.source.release' must be true or false, not a number"},
    // ---- build records: what verify would run
    // A consistent record: exit 0, what would run listed, nothing run.
    {"record_command_not_run", [](const fs::path& dir) { command_recipe_and_record(dir); }, "verify r.json", 0, "",
     "(build.command)"},
    {"record_command_not_run_says_so", [](const fs::path& dir) { command_recipe_and_record(dir); }, "verify r.json", 0,
     "", "r.json: consistent (record, recipe and source agree); nothing was run: pass --allow-run to rebuild"},
    {"record_recipe_changed", [](const fs::path& dir) { command_recipe_and_record(dir, std::string(64, 'a')); },
     "verify --allow-run r.json", 2, "has changed since the record was written (sha256 "},
    {"record_recipe_missing",
     [](const fs::path& dir) {
       command_recipe_and_record(dir);
       fs::remove(dir / "r.toml");
     },
     "verify --allow-run r.json", 2, "r.json: the recipe the record names cannot be read: "},
    {"record_recipe_fifo",
     [](const fs::path& dir) {
       command_recipe_and_record(dir);
       fs::remove(dir / "r.toml");
       ASSERT_EQ(::mkfifo((dir / "r.toml").c_str(), 0644), 0);
     },
     "verify --allow-run r.json", 2, "r.toml: is a FIFO, not a regular file"},
    {"record_names_no_recipe", record_file(record_json("{}")), "verify --allow-run r.json", 2,
     "r.json: the record names no recipe (inputs.recipe.path)"},
    // ---- wheels
    {"wheel_missing_verify", nullptr, "verify nope.whl", 2,
     "opforge: error: nope.whl: no such file\n  hint: pass a .whl file"},
    {"wheel_missing_inspect", nullptr, "inspect nope.whl", 2,
     "opforge: error: nope.whl: no such file\n  hint: pass a .whl file"},
    {"wheel_zero_bytes_verify", text_file("w-1.0-py3-none-any.whl", ""), "verify w-1.0-py3-none-any.whl", 2,
     "w-1.0-py3-none-any.whl: not a zip archive (0 bytes; even an empty zip has 22)"},
    {"wheel_zero_bytes_inspect", text_file("w-1.0-py3-none-any.whl", ""), "inspect w-1.0-py3-none-any.whl", 2,
     "w-1.0-py3-none-any.whl: not a zip archive (0 bytes; even an empty zip has 22)"},
    {"wheel_upper_case_extension", text_file("W-1.0-PY3-NONE-ANY.WHL", ""), "verify W-1.0-PY3-NONE-ANY.WHL", 2,
     "W-1.0-PY3-NONE-ANY.WHL: not a zip archive (0 bytes"},
    {"wheel_not_zip", text_file("w-1.0-py3-none-any.whl", "this is plain text, long enough to look for a zip end"),
     "inspect w-1.0-py3-none-any.whl", 2, "w-1.0-py3-none-any.whl: not a valid zip archive: "},
    {"wheel_empty_zip", text_file("w-1.0-py3-none-any.whl", std::string("PK\x05\x06", 4) + std::string(18, '\0')),
     "inspect w-1.0-py3-none-any.whl", 2, "w-1.0-py3-none-any.whl: an empty zip archive, not a wheel"},
    {"wheel_fifo", [](const fs::path& dir) { ASSERT_EQ(::mkfifo((dir / "w.whl").c_str(), 0644), 0); }, "inspect w.whl",
     2, "w.whl: is a FIFO, not a regular file"},
    {"wheel_dev_zero", [](const fs::path& dir) { fs::create_symlink("/dev/zero", dir / "w.whl"); }, "verify w.whl", 2,
     "w.whl: is a character device, not a regular file"},
    {"wheel_declares_1tib", text_file("w-1.0-py3-none-any.whl", zip_declaring("w/big.so", 1ull << 40)),
     "verify w-1.0-py3-none-any.whl", 2,
     "zip entry w/big.so declares 1099511627776 bytes, more than the limit of 1 GiB for one file"},
    {"wheel_declares_3gb_inspect", text_file("w-1.0-py3-none-any.whl", zip_declaring("w/big.so", 3000000000ull)),
     "inspect w-1.0-py3-none-any.whl", 2,
     "zip entry w/big.so declares 3000000000 bytes, more than the limit of 1 GiB for one file"},
    {"wheel_deflate_bomb", [](const fs::path& dir) { zip_of_zeros(dir / "w-1.0-py3-none-any.whl", 64u << 20); },
     "inspect w-1.0-py3-none-any.whl", 2, "times (a zip bomb?)"},
    {"wheel_100001_entries", [](const fs::path& dir) { zip_of_empty_files(dir / "w-1.0-py3-none-any.whl", 100001); },
     "inspect w-1.0-py3-none-any.whl", 2, "the archive has 100001 entries, more than the limit of 100000"},
    {"wheel_by_content", text_file("w.bin", good_wheel()), "verify w.bin", 1,
     "w.bin: the wheel does not verify:\n  file name 'w.bin' is not NAME-VERSION(-BUILD)-PY-ABI-PLATFORM.whl"},
    // ---- node reports: a format is checked, never guessed (each was read as "no format" and passed)
    {"nodes_format_sound", wheel_and_report(""), "verify w-1.0-py3-none-any.whl --nodes n.json", 0, "",
     "on 1 node: 1 ok, 0 fail"},
    {"nodes_format_float", wheel_and_report("2.0"), "verify w-1.0-py3-none-any.whl --nodes n.json", 1, "",
     "node.format 2.0 is not an integer, expected the integer 1"},
    {"nodes_format_string", wheel_and_report("\"2\""), "verify w-1.0-py3-none-any.whl --nodes n.json", 1, "",
     "node.format \"2\" is a string, expected the integer 1"},
    {"nodes_format_2_to_the_63", wheel_and_report("9223372036854775808"),
     "verify w-1.0-py3-none-any.whl --nodes n.json", 1, "",
     "node.format 9223372036854775808 is newer than this opforge reads (1)"},
    {"nodes_report_deep", wheel_and_report("", deep_json()), "verify w-1.0-py3-none-any.whl --nodes n.json", 1, "",
     "not JSON opforge reads: arrays and objects nested more than 256 levels deep"},
    {"nodes_report_fifo",
     [](const fs::path& dir) {
       spit(dir / "w-1.0-py3-none-any.whl", good_wheel());
       ASSERT_EQ(::mkfifo((dir / "n.json").c_str(), 0644), 0);
     },
     "verify w-1.0-py3-none-any.whl --nodes n.json", 2,
     "cannot read the node report n.json: n.json: is a FIFO, not a regular file"},
    // ---- flags
    {"verify_no_target", nullptr, "verify", 2, "target is required"},
    {"verify_unknown_flag", nullptr, "verify --allow-runs r.json", 2, "--allow-runs"},
    {"inspect_unknown_flag", nullptr, "inspect --jsn w.whl", 2, "--jsn"},
};

struct RecordsCliRun {
  int exit_code = -1;
  std::string out, err;
};

RecordsCliRun run_cli(const fs::path& cwd, const std::string& args) {
  std::string cmd = "cd '" + cwd.string() + "' && env -i PATH=/usr/bin:/bin HOME='" + (cwd / "home").string() +
                    "' TMPDIR='" + (cwd / "tmp").string() + "' OPFORGE_CACHE_DIR='" + (cwd / "home").string() +
                    "/cache' timeout 60 '" + OPFORGE_BINARY + "' " + args + " >stdout.txt 2>stderr.txt";
  RecordsCliRun r;
  int status = std::system(cmd.c_str());
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = slurp(cwd / "stdout.txt");
  r.err = slurp(cwd / "stderr.txt");
  return r;
}

std::set<std::string> listing(const fs::path& dir) {
  std::set<std::string> out;
  for (auto it = fs::recursive_directory_iterator(dir); it != fs::recursive_directory_iterator(); ++it)
    out.insert(fs::relative(it->path(), dir).string());
  return out;
}

class CliHostileRecords : public ::testing::TestWithParam<Case> {};

TEST_P(CliHostileRecords, ExitCodeMessageAndNothingWritten) {
  const Case& c = GetParam();
  fs::path dir = fs::path(OPFORGE_BUILD_DIR) / "cli_hostile_records" / c.name;
  fs::remove_all(dir);
  fs::create_directories(dir / "home");
  fs::create_directories(dir / "tmp");
  if (c.setup) c.setup(dir);
  spit(dir / "stdout.txt", "");
  spit(dir / "stderr.txt", "");
  auto before = listing(dir);
  RecordsCliRun r = run_cli(dir, c.args);
  EXPECT_EQ(r.exit_code, c.exit_code) << r.err;
  EXPECT_NE(r.err.find(c.expected), std::string::npos) << "stderr:\n" << r.err;
  EXPECT_LT(r.err.size(), 4096u) << "messages quote untrusted text only in part";
  if (*c.expected_out) EXPECT_NE(r.out.find(c.expected_out), std::string::npos) << "stdout:\n" << r.out;
  else EXPECT_EQ(r.out, "");
  // Nothing written: the folder (HOME and TMPDIR included) holds what the setup made, no more.
  EXPECT_EQ(listing(dir), before);
  EXPECT_FALSE(fs::exists(dir / "pwned")) << "a command from the record ran";
}

INSTANTIATE_TEST_SUITE_P(Table, CliHostileRecords, ::testing::ValuesIn(kRecordCases),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(CliHostileRecords, TableHasAtLeast25Rows) { EXPECT_GE(std::size(kRecordCases), 25u); }

}  // namespace
