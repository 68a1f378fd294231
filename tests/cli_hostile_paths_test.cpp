// The hostile table of the file system: folders opforge cannot write, links, names that are
// bytes rather than text, and the documented minimal set-up inside a git tree, each run through
// the real binary in a scratch world made by a shell snippet. Each row has its exit code, a
// stable part of its message and a bound on its time: nothing waits for what cannot change.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <ostream>
#include <string>
#include <vector>

#include "test_util.h"

namespace {

namespace fs = std::filesystem;
using opforge::test_util::slurp;
using opforge::test_util::spit;

struct PathCase {
  std::string name;
  std::string setup;     ///< bash, run in the world's folder first; exit 77 skips the row ("SKIP: reason" on stdout)
  std::string cwd;       ///< bash word for the folder opforge runs in, relative to the world ("." when empty)
  std::string env;       ///< extra VAR=value words for env(1), bash-quoted ($'\xff' allowed)
  std::string args;      ///< after `opforge`
  int exit_code;         ///< -1: any
  std::string expected;  ///< a stable part of the output (stderr, else stdout)
  bool json = false;     ///< stdout must be JSON that Python reads (surrogate escapes allowed)
  int max_seconds = 60;
  std::string check{};    ///< bash, run in the world's folder after opforge: must exit 0
  bool may_wait = false;  ///< another opforge really holds the lock (the row starts one)
};

void PrintTo(const PathCase& c, std::ostream* os) { *os << c.name; }

// The op with a [[probe]] (libm), which plan compiles once and remembers in probes.json.
const std::string kProbedOp =
    "printf 'name = \"plain\"\\nkind = \"cpu\"\\nsources = [\"a.cpp\"]\\n[[probe]]\\nname = \"libm\"\\ncode = "
    "\"return 0;\"\\nlibraries = [\"m\"]\\n' > src/ops/hostile/op.toml";
// A command build whose command fails keeps its tree, stamped for resuming; then `for s in` its
// stamps (the row says what becomes of each).
const std::string kKeptTree =
    "printf '[source]\\npath = \"src\"\\n[build]\\nbackend = \"command\"\\ncommand = [\"false\"]\\n' > c.toml && "
    "{ $OPFORGE build c.toml >/dev/null 2>&1 || true; } && ls cache/trees/*/.opforge-resume >/dev/null && for s in "
    "cache/trees/*/.opforge-resume";
// The tree was copied afresh: its stamp is a file again.
const std::string kStampMadeAgain =
    "for s in cache/trees/*/.opforge-resume; do [ -f \"$s\" ] && ! [ -L \"$s\" ] || exit 1; done";

/// A shell command printing `before`, 50,000 '[', a string holding the escape \udce9 (a form opforge
/// writes), 50,000 ']' and `after`: 100 KB of JSON nested deeper than any walk over it survives.
std::string deep_json(const std::string& before, const std::string& after) {
  return std::string(
             "python3 -c 'import sys; sys.stdout.write(sys.argv[1] + \"[\" * 50000 + chr(34) + chr(92) + "
             "\"udce9\" + chr(34) + \"]\" * 50000 + sys.argv[2])' '") +
         before + "' '" + after + "'";  // no single quote in either
}

// A CUDA_HOME beside the real one, without version.json (so nvcc --version is asked), whose
// bin/nvcc answers --version as the shell text that follows, and compiles as the real nvcc.
std::string fake_toolkit(const std::string& version_answer) {
  return "mkdir -p tk/bin && for x in /usr/local/cuda/*; do case \"$x\" in */bin|*/version.json|*/version.txt) ;; "
         "*) ln -s \"$x\" tk/ ;; esac; done && ln -s /usr/local/cuda/bin/* tk/bin/ && rm tk/bin/nvcc && "
         "{ echo '#!/bin/bash'; echo 'if [ \"$1\" = --version ]; then " +
         version_answer + "; fi'; echo 'exec /usr/local/cuda/bin/nvcc \"$@\"'; } > tk/bin/nvcc && chmod +x tk/bin/nvcc";
}
// The real version text, then a line of bytes that are not UTF-8.
const std::string kOddNvcc =
    fake_toolkit("/usr/local/cuda/bin/nvcc --version; printf \"\\377\\376 vendor build\\n\"; exit 0");
// An nvcc that never answers (and ignores SIGTERM).
const std::string kSilentNvcc = fake_toolkit("trap \"\" TERM; exec -a opforge-test-silent-nvcc sleep 600");
// Two dist folders holding different wheels of one name (the op's source differs), built.
const std::string kTwoDists =
    "$OPFORGE build r.toml -j1 --dist-dir d1 >/dev/null 2>&1 && sed -i 's/return 1/return 7/' src/ops/hostile/a.cpp && "
    "$OPFORGE build r.toml -j1 --dist-dir d2 --build-dir build2 >/dev/null 2>&1 && ls d1/*.whl d2/*.whl >/dev/null";
// summary.json names exactly the wheels that are in wh/, with their sha256; `then` follows on the
// command's line (a pipe).
std::string summary_matches(const std::string& then = "") {
  return "python3 - wh <<'PY'" + then +
         "\nimport hashlib, json, os, sys\nd = sys.argv[1]\n"
         "rows = json.load(open(os.path.join(d, 'summary.json')))['wheels']\n"
         "whl = sorted(n for n in os.listdir(d) if n.endswith('.whl'))\n"
         "assert sorted(r['wheel'] for r in rows) == whl, (rows, whl)\n"
         "for r in rows:\n  assert r['sha256'] == hashlib.sha256(open(os.path.join(d, r['wheel']), "
         "'rb').read()).hexdigest(), r\n"
         "print(len(rows), 'rows')\nPY";
}
// The world moved into a folder whose name is not UTF-8.
const std::string kOddFolder = "mkdir $'w_\\xff' && cp -r r.toml src $'w_\\xff'/";
const std::string kReadOnlyMount =
    "mkdir -p ro && { mount -t tmpfs -o ro,size=1m tmpfs ro 2>/dev/null || { echo 'SKIP: mounting is not allowed'; "
    "exit 77; }; }";
// The documented minimal set-up: a recipe at the top of a committed git tree; the table's own
// files are ignored, opforge's build/, dist/ and cache/ are not.
const std::string kGitTree =
    "printf '[source]\\npath = \".\"\\nops_dir = \"src/ops\"\\n' > top.toml && "
    "printf 'setup.*\\nrun.sh\\nstdout.txt\\nstderr.txt\\ncheck.*\\nr.toml\\n' > .gitignore && "
    "git init -q . && git add top.toml .gitignore src && "
    "git -c user.name=t -c user.email=t@t commit -qm init";

std::vector<PathCase> path_cases() {
  return {
      // --- folders opforge cannot write: "cannot" is not "held", and nothing waits
      {"dist_read_only_mount", kReadOnlyMount, "", "", "build r.toml -j1 --dist-dir ro", 1,
       "/ro/.opforge-dist.lock: Read-only file system\n  hint: opforge commits wheels into ", false, 30, "umount ro"},
      {"dist_link_to_unwritable_folder", "ln -s /sys dist", "", "", "build r.toml -j1", 1,
       "/dist/.opforge-dist.lock: Permission denied", false, 30},
      {"index_into_read_only_mount", kReadOnlyMount, "", "", "index ro", 1, "cannot open the lock file", false, 30,
       "umount ro"},
      {"index_into_unwritable_folder", "ln -s /sys wh", "", "", "index wh", 1,
       "wh/.opforge-dist.lock: Permission denied", false, 30},
      // --- names that are bytes: a working folder, CUDA_HOME, a PATH entry, nvcc's output
      {"odd_folder_plan_json", kOddFolder, "$'w_\\xff'", "", "plan r.toml --json", 0, "\"recipe\"", true},
      {"odd_folder_plan_text", kOddFolder, "$'w_\\xff'", "", "plan r.toml", 0, "plain"},
      {"odd_folder_build", kOddFolder, "$'w_\\xff'", "", "build r.toml -j1", 0, "opforge_ops-0.1.0", false, 300},
      {"odd_folder_build_then_inspect", kOddFolder + " && cd $'w_\\xff' && $OPFORGE build r.toml -j1 >/dev/null 2>&1",
       "$'w_\\xff'", "", "inspect dist/*.whl --json", 0, "opforge_ops", true, 300},
      {"odd_folder_verify", kOddFolder + " && cd $'w_\\xff' && $OPFORGE build r.toml -j1 >/dev/null 2>&1", "$'w_\\xff'",
       "", "verify dist/*.whl", -1, "", false, 300},
      {"odd_folder_index", kOddFolder + " && cd $'w_\\xff' && $OPFORGE build r.toml -j1 >/dev/null 2>&1", "$'w_\\xff'",
       "", "index wh dist --json", 0, "opforge_ops-0.1.0", true, 300},
      {"odd_folder_env", kOddFolder, "$'w_\\xff'", "", "env r.toml", -1, ""},
      {"odd_folder_doctor_json", kOddFolder, "$'w_\\xff'", "", "doctor --json", -1, "", true},
      {"odd_folder_cache_json", kOddFolder, "$'w_\\xff'", "OPFORGE_CACHE_DIR=$PWD/cache", "cache --json", 0,
       "\"cache\"", true},
      {"odd_cuda_home", "ln -s /usr/local/cuda $'cuda_\\xff'", "", "CUDA_HOME=$PWD/$'cuda_\\xff'", "plan r.toml --json",
       0, "cuda_\\udcff", true},
      {"odd_cuda_home_doctor", "ln -s /usr/local/cuda $'cuda_\\xff'", "", "CUDA_HOME=$PWD/$'cuda_\\xff'",
       "doctor --json", -1, "", true},
      {"odd_path_entry", "mkdir $'bin_\\xff'", "", "PATH=$PWD/$'bin_\\xff':/usr/bin:/bin", "plan r.toml --json", 0,
       "\"recipe\"", true},
      {"odd_nvcc_output", kOddNvcc, "", "CUDA_HOME=$PWD/tk", "plan r.toml --json", -1, "", true},
      {"odd_nvcc_output_text", kOddNvcc, "", "CUDA_HOME=$PWD/tk", "plan r.toml", -1, ""},
      {"odd_nvcc_output_doctor", kOddNvcc, "", "CUDA_HOME=$PWD/tk", "doctor --json", -1, "", true},
      {"nvcc_never_answers", kSilentNvcc, "", "CUDA_HOME=$PWD/tk", "plan r.toml", 2,
       "bin/nvcc --version did not answer within 10 s", false, 40, "! pgrep -f opforge-test-silent-nvcc"},
      // --- files opforge keeps: a FIFO or a device where a cache file or a stamp belongs is said,
      // ignored and made again, at once (a FIFO hung plan and build; /dev/zero ran out of memory)
      {"compile_peaks_fifo", "mkdir -p cache && mkfifo cache/compile-peaks.json", "", "", "plan r.toml", 0,
       "/cache/compile-peaks.json: is a FIFO, not a regular file: ignored and made again", false, 30},
      {"compile_peaks_dev_zero", "mkdir -p cache && ln -s /dev/zero cache/compile-peaks.json", "", "", "plan r.toml", 0,
       "/cache/compile-peaks.json: is a character device, not a regular file: ignored and made again", false, 30},
      {"compile_peaks_fifo_build", "mkdir -p cache && mkfifo cache/compile-peaks.json", "", "", "build r.toml -j1", 0,
       "/cache/compile-peaks.json: is a FIFO, not a regular file: ignored and made again", false, 120,
       "ls dist/*.whl >/dev/null && ! [ -p cache/compile-peaks.json ]"},
      {"versions_cache_fifo", "mkdir -p cache && mkfifo cache/versions.json", "", "", "plan r.toml", 0,
       "/cache/versions.json: is a FIFO, not a regular file: ignored and made again", false, 30,
       "[ -f cache/versions.json ] && ! [ -p cache/versions.json ]"},
      {"probes_cache_dev_zero", kProbedOp + " && mkdir -p cache && ln -s /dev/zero cache/probes.json", "", "",
       "plan r.toml", 0, "/cache/probes.json: is a character device, not a regular file: ignored and made again", false,
       30, "[ -f cache/probes.json ] && ! [ -L cache/probes.json ]"},
      {"resume_stamp_fifo", kKeptTree + "; do rm \"$s\"; mkfifo \"$s\"; done", "", "", "build c.toml", 1,
       ".opforge-resume: is a FIFO, not a regular file, so the stamp is ignored and made again; copied afresh", false,
       60, kStampMadeAgain},
      {"resume_stamp_dev_zero", kKeptTree + "; do rm \"$s\"; ln -s /dev/zero \"$s\"; done", "", "", "build c.toml", 1,
       ".opforge-resume: is a character device, not a regular file, so the stamp is ignored and made again", false, 60,
       kStampMadeAgain},
      {"versions_cache_deep_json", "mkdir -p cache && " + deep_json("{\"k\": ", "}") + " > cache/versions.json", "", "",
       "plan r.toml", 0,
       "/cache/versions.json: not JSON opforge reads: arrays and objects nested more than 256 levels deep: ignored "
       "and made again",
       false, 30, "python3 -c 'import json; json.load(open(\"cache/versions.json\"))'"},
      {"node_report_deep_json", deep_json("{\"gpus\": ", "}") + " > deep.json", "", "", "plan r.toml --nodes deep.json",
       2, "deep.json: not JSON opforge reads: arrays and objects nested more than 256 levels deep", false, 30},
      // --- links: out of the tree, loops, dangling
      {"source_link_out_of_tree",
       "echo 'extern \"C\" int outside() { return 2; }' > outside.cpp && ln -s ../../../outside.cpp "
       "src/ops/hostile/b.cpp && printf 'name = \"plain\"\\nkind = \"cpu\"\\nsources = [\"a.cpp\", \"b.cpp\"]\\n' > "
       "src/ops/hostile/op.toml",
       "", "", "build r.toml -j1", 2, "source 'b.cpp' resolves to '", false, 30, "! ls dist/*.whl"},
      {"include_link_out_of_tree",
       "mkdir inc && ln -s ../../../inc src/ops/hostile/inc && printf 'name = \"plain\"\\nkind = \"cpu\"\\nsources = "
       "[\"a.cpp\"]\\ninclude_dirs = [\"inc\"]\\n' > src/ops/hostile/op.toml",
       "", "", "plan r.toml", 2, "include folder 'inc' resolves to '", false, 30},
      {"op_folder_link_out_of_tree",
       "mkdir -p elsewhere && mv src/ops/hostile elsewhere/ && ln -s ../../elsewhere/hostile src/ops/hostile", "", "",
       "plan r.toml", 2, "the op folder '.' resolves to '", false, 30},
      {"scratch_copy_link_loop",
       "printf '[source]\\npath = \"src\"\\n[build]\\nbackend = \"command\"\\ncommand = [\"true\"]\\n' > c.toml && "
       "ln -s \"$PWD/src\" src/loop1 && ln -s \"$PWD/src/ops\" src/ops/loop2",
       "", "", "build c.toml", 2, "which holds it: a loop the copy cannot follow", false, 30},
      {"recipe_link_loop", "ln -s loop.toml loop.toml", "", "", "plan loop.toml", 2,
       "recipe file 'loop.toml' is a symbolic link loop"},
      {"recipe_dangling_link", "ln -s gone.toml r9.toml", "", "", "plan r9.toml", 2,
       "recipe file 'r9.toml' is a symbolic link to 'gone.toml', which does not exist"},
      {"dist_dangling_link", "ln -s /nonexistent-opforge/d dist", "", "", "build r.toml -j1", 1,
       "dist is a symbolic link to /nonexistent-opforge/d, which does not exist", false, 120},
      {"build_dangling_link", "ln -s /nonexistent-opforge/b build", "", "", "build r.toml -j1", 1,
       "build is a symbolic link to /nonexistent-opforge/b, which does not exist", false, 60},
      {"dist_link_recovers_a_killed_commit",
       "mkdir realdist && ln -s realdist dist && { OPFORGE_TEST_STOP_AT=record-stashed $OPFORGE build r.toml -j1 "
       ">/dev/null 2>&1 || true; } && ls -A realdist | grep -q opforge-",
       "", "", "build r.toml -j1", 0, "opforge_ops-0.1.0", false, 120,
       "ls realdist/*.whl.opforge-record.json && [ -z \"$(ls -A realdist | grep '^\\.' | grep -v "
       "'^\\.opforge-dist.lock$')\" ]"},
      // --- arch lists
      {"arch_entry_dropped_is_a_warning_in_build", "", "", "TORCH_CUDA_ARCH_LIST='7.0;8.0'", "build r.toml -j1", 0,
       "warning: arch 7.0 (asked for by TORCH_CUDA_ARCH_LIST) dropped: nvcc 13.0 does not accept sm_70", false, 120,
       "grep -q '\"arch_dropped\"' dist/*.opforge-record.json && grep -q '\"arch_list\": \"8.0\"' "
       "dist/*.opforge-record.json"},
      // --- the wheelhouse under concurrency: conflicts by bytes, under the lock; one row per wheel
      {"index_conflicting_wheels_at_once",
       // only the index in the background; `|| rc=$?`: setup.sh's `set -e` would otherwise end the
       // background group before bg.rc is written whenever this index loses the race (exit 2)
       kTwoDists + "\n{ rc=0; $OPFORGE index wh d2 > bg.out 2>&1 || rc=$?; echo $rc > bg.rc; } &", "", "",
       "index wh d1", -1, "", false, 60,
       // bounded: a background index that never ends fails the check instead of hanging the suite
       "i=0; while [ ! -s bg.rc ] && [ $i -lt 1200 ]; do sleep 0.1; i=$((i+1)); done; grep -Eq '^(0|2)$' bg.rc && [ "
       "$(ls wh/*.whl | wc -l) = 1 ] && "
       "grep -q 'is a different wheel of that name' stderr.txt bg.out && " +
           summary_matches(),
       true},
      {"index_same_name_other_bytes_is_refused", kTwoDists + " && $OPFORGE index wh d1 >/dev/null 2>&1", "", "",
       "index wh d2", 2, "is a different wheel of that name", false, 60, summary_matches()},
      {"index_two_projects_two_rows",
       "$OPFORGE build r.toml -j1 --dist-dir d1 >/dev/null 2>&1 && printf '[package]\\nname = \"other-ops\"\\n' "
       ">> r2.toml && cat r.toml >> r2.toml && $OPFORGE build r2.toml -j1 --dist-dir d2 --build-dir build2 >/dev/null "
       "2>&1",
       "", "", "index wh d1 d2", 0, "added", false, 60, summary_matches(" | grep -q '^2 rows'")},
      // --- the documented minimal set-up: a recipe at the top of a committed git tree, built twice
      {"git_tree_built_twice_stays_clean", kGitTree + " && $OPFORGE build top.toml -j1 >/dev/null 2>&1", "", "",
       "build top.toml -j1 --release", 0, "opforge_ops-0.1.0+cpu.g", false, 300,
       "ls dist/*.whl >/dev/null && ! ls dist/ | grep -q dirty"},
      {"git_tree_relative_cache_stays_clean",
       kGitTree + " && OPFORGE_CACHE_DIR=cache2 $OPFORGE build top.toml -j1 >/dev/null 2>&1 && ls -d cache2", "",
       "OPFORGE_CACHE_DIR=cache2", "build top.toml -j1 --release", 0, "opforge_ops-0.1.0+cpu.g", false, 300,
       "! ls dist/ | grep -q dirty"},
  };
}

class CliHostilePaths : public ::testing::TestWithParam<PathCase> {};

TEST_P(CliHostilePaths, ExitCodeMessageAndBoundedTime) {
  const PathCase& c = GetParam();
  fs::path dir = fs::path(OPFORGE_BUILD_DIR) / "cli_hostile_paths" / c.name;
  (void)std::system(("umount '" + dir.string() + "/ro' 2>/dev/null").c_str());
  fs::remove_all(dir);
  fs::create_directories(dir / "src/ops/hostile");
  spit(dir / "r.toml", "[source]\npath = \"src\"\nops_dir = \"ops\"\n");
  spit(dir / "src/ops/hostile/op.toml", "name = \"plain\"\nkind = \"cpu\"\nsources = [\"a.cpp\"]\n");
  spit(dir / "src/ops/hostile/a.cpp", "extern \"C\" int hostile_a() { return 1; }\n");

  const std::string env = "env -i PATH=/usr/bin:/bin HOME='" + dir.string() + "' OPFORGE_CACHE_DIR='" +
                          (dir / "cache").string() + "' OPFORGE='" + OPFORGE_BINARY + "'";
  spit(dir / "setup.sh", "set -e\n" + c.setup + "\n");
  int setup = std::system(("cd '" + dir.string() + "' && " + env + " bash setup.sh >setup.txt 2>&1").c_str());
  if (WIFEXITED(setup) && WEXITSTATUS(setup) == 77) GTEST_SKIP() << slurp(dir / "setup.txt");
  ASSERT_TRUE(WIFEXITED(setup) && WEXITSTATUS(setup) == 0) << slurp(dir / "setup.txt");

  // bash, so that $'...' words name the odd folders; the streams land in the world's folder.
  spit(dir / "run.sh", "cd " + (c.cwd.empty() ? std::string(".") : c.cwd) + " && exec " + env + " " + c.env +
                           " \"$OPFORGE\" " + c.args + " >\"$W/stdout.txt\" 2>\"$W/stderr.txt\"\n");
  const auto start = std::chrono::steady_clock::now();
  int status = std::system(("cd '" + dir.string() + "' && W='" + dir.string() + "' OPFORGE='" + OPFORGE_BINARY +
                            "' timeout -k 5 " + std::to_string(c.max_seconds + 30) + " bash run.sh")
                               .c_str());
  const auto seconds =
      std::chrono::duration_cast<std::chrono::seconds>(std::chrono::steady_clock::now() - start).count();
  int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::string err = slurp(dir / "stderr.txt"), out = slurp(dir / "stdout.txt");

  if (c.exit_code >= 0) EXPECT_EQ(code, c.exit_code) << err;
  else EXPECT_TRUE(code == 0 || code == 2 || code == 3) << code << "\n" << err;
  const std::string shown = out + err;
  EXPECT_NE(shown.find(c.expected), std::string::npos) << "expected: " << c.expected << "\ngot:\n"
                                                       << shown.substr(0, 4000);
  EXPECT_EQ(err.find("internal error"), std::string::npos) << err.substr(0, 4000);
  if (!c.may_wait) {
    EXPECT_EQ(err.find("waiting for another"), std::string::npos) << err.substr(0, 4000);
  }
  EXPECT_LE(seconds, c.max_seconds);
  if (c.json && code == 0) {
    int ok = std::system(("python3 -c 'import json,sys; json.load(open(sys.argv[1], encoding=\"utf-8\", "
                          "errors=\"strict\"))' '" +
                          (dir / "stdout.txt").string() + "'")
                             .c_str());
    EXPECT_EQ(ok, 0) << "stdout is not JSON:\n" << out.substr(0, 4000);
  }
  if (!c.check.empty()) {
    spit(dir / "check.sh", c.check + "\n");
    int ok = std::system(("cd '" + dir.string() + "' && bash check.sh >check.txt 2>&1").c_str());
    EXPECT_EQ(ok, 0) << c.check << "\n" << slurp(dir / "check.txt") << "\n" << shown.substr(0, 4000);
  }
}

INSTANTIATE_TEST_SUITE_P(Table, CliHostilePaths, ::testing::ValuesIn(path_cases()),
                         [](const auto& info) { return info.param.name; });

}  // namespace
