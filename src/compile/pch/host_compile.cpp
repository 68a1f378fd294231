/// `opforge __host-compile` (compile/pch/pch.h): one host compile, with the precompiled torch header
/// when it may, the header made once enough compiles are known to need it. Its steps, in order:
/// read the command line (read_invocation), decide whether the file may use a header (eligible),
/// find its entry (entry_files), have the header ready (header_ready: made, by make_header, once
/// wanted_by_enough), compile with it (compile_with_header) and merge its dependencies
/// (merge_dependencies). A step that says no leaves the compile as it came (HostCompile::plain).
#include <chrono>
#include <iostream>
#include <optional>
#include <set>
#include <variant>

#include "cache/layout.h"
#include "compile/pch/detail.h"
#include "compile/pch/pch.h"
#include "probe/links.h"
#include "settings/settings.h"
#include "util/strings.h"

namespace opforge::compile::pch {

namespace {

/// `--compiler PATH --pch-dir DIR [--launcher PROGRAM] -- ARGS…`; nullopt without a compiler.
struct Invocation {
  fs::path compiler, pch_dir;
  std::string launcher;
  std::vector<std::string> args;  ///< the compiler's, after "--"
};
std::optional<Invocation> read_invocation(const std::vector<std::string>& argv) {
  Invocation in;
  for (std::size_t i = 0; i < argv.size(); ++i) {
    if (argv[i] == "--") {
      in.args.assign(argv.begin() + static_cast<long>(i) + 1, argv.end());
      break;
    }
    if (i + 1 >= argv.size()) break;
    if (argv[i] == "--compiler") in.compiler = argv[++i];
    else if (argv[i] == "--pch-dir") in.pch_dir = argv[++i];
    else if (argv[i] == "--launcher") in.launcher = argv[++i];
  }
  if (in.compiler.empty()) return std::nullopt;
  return in;
}

/// One compile's world: what it was asked, where it runs, and its two ways to run the compiler.
struct HostCompile {
  probe::Machine m;
  const Console& console;
  Invocation in;
  fs::path cwd{};
  CompileLine line{};
  std::string source{};  ///< the first source operand, as given ("" when none)
  std::optional<fs::path> log_path{};

  /// The compiler's command line (behind the launcher) with `extra` after its own arguments.
  probe::Command command(const std::vector<std::string>& extra) const {
    probe::Command c;
    if (!in.launcher.empty()) c.argv.push_back(in.launcher);
    c.argv.push_back(in.compiler.string());
    c.argv.insert(c.argv.end(), in.args.begin(), in.args.end());
    c.argv.insert(c.argv.end(), extra.begin(), extra.end());
    c.argv.push_back("-g0");
    return c;
  }
  /// The compile as it came, with this process's output: its exit status.
  int plain() const {
    auto c = command({});
    c.output = probe::Output::inherit;
    auto r = m.proc.run(c);
    if (!r) {
      console.err("opforge: cannot run " + in.compiler.string() + ": " + r.error().render() + "\n");
      return 127;
    }
    return r->signal ? 128 + r->signal : r->exit_code;
  }
  /// The compile's outcome in the pch log (Summary's kinds), one line.
  void log(std::string_view what, std::string_view detail, std::string_view more = {}) const {
    if (!log_path) return;
    std::string l = std::string(what) + "\t" + source + "\t" + std::string(detail);
    if (!more.empty()) l += "\t" + std::string(more);
    for (auto& ch : l)
      if (ch == '\n') ch = ' ';
    (void)m.fs.append_file(*log_path, l + "\n");
  }
  fs::path absolute(const fs::path& p) const { return p.is_absolute() ? p : cwd / p; }
};

/// A file that may use a header: where torch's headers are, the project's include folders and
/// what the file reads before the header.
struct Eligible {
  fs::path torch_dir, tree, src_path;
  std::vector<fs::path> project_dirs;
  SourceScan found;
};
/// Why a compile is kept as it is: the pch log's line (none for a compile the header cannot
/// concern at all).
struct Keep {
  std::string what, detail;
};

std::variant<Eligible, Keep> eligible(const HostCompile& h) {
  if (h.in.pch_dir.empty() || !not_eligible(h.line).empty()) return Keep{};
  Eligible e;
  e.torch_dir = torch_include_dir(h.m.fs, h.line, h.cwd);
  if (e.torch_dir.empty()) return Keep{};
  e.tree = settings::pch_tree(h.m.env);
  for (const auto& d : h.line.include_dirs) {
    const fs::path dir = h.absolute(d);
    if (e.tree.empty() || probe::is_within(dir, e.tree)) e.project_dirs.push_back(dir);
  }
  e.src_path = h.absolute(h.source);
  e.found = scan(h.m.fs, e.src_path, e.project_dirs, e.tree);
  if (!e.found.reaches_header) {
    if (e.found.why_not.starts_with("does not include")) return Keep{"plain", ""};
    return Keep{"skipped", e.found.why_not};
  }
  // A project folder that holds a name torch's headers include would be shadowed by the header
  // made without it.
  for (const auto& d : e.tree.empty() ? std::vector<fs::path>{} : e.project_dirs)
    for (const char* top : {"torch", "ATen", "c10", "caffe2", "pybind11", "Python.h"})
      if (h.m.fs.type_of(d / top) != probe::FileType::none && d != e.torch_dir)
        return Keep{"skipped",
                    "the project's include folder " + d.string() + " holds " + top + ", which torch's headers include"};
  return e;
}

/// Macros gcc has named as read by a header made without them (see without_project_macros).
std::set<std::string> read_consulted(const probe::FileSystem& fs, const fs::path& file) {
  std::set<std::string> consulted;
  if (auto text = fs.read_file(file, 1u << 20))
    for (auto l : strings::split(*text, '\n'))
      if (!strings::trim(l).empty()) consulted.insert(std::string(strings::trim(l)));
  return consulted;
}

/// The entry in the store: its folder and the header, the mark that it is made and why it could
/// not be, and the list of compiles that wanted it before it was.
struct EntryFiles {
  fs::path dir, header, done, failed, wanted;
  std::vector<std::string> key_args;  ///< what the header is made with
};

/// Whether kMakeAt compiles are known to need the header: those that wanted it before, and this
/// extension's files that read the same before torch's header (its build.ninja), and in a build
/// that planned its extensions, the other extensions' files alike. When not, this one is added
/// to those that wanted it.
bool wanted_by_enough(const HostCompile& h, const Eligible& e, const EntryFiles& entry,
                      const std::set<std::string>& consulted) {
  // Sources by their path in the scratch tree: a second build of the same project counts once.
  auto named = [&](const fs::path& p) {
    return !e.tree.empty() && probe::is_within(p, e.tree)
               ? p.lexically_normal().lexically_relative(e.tree.lexically_normal()).string()
               : p.lexically_normal().string();
  };
  (void)h.m.fs.create_directories(h.in.pch_dir);
  std::set<std::string> known;
  auto before = h.m.fs.read_file(entry.wanted, 1u << 20);
  for (auto l : strings::split(before ? *before : std::string(), '\n'))
    if (!l.empty()) known.insert(std::string(l));
  const std::string me = named(e.src_path);
  const bool recorded = known.contains(me);
  known.insert(me);
  // Another file counts when it reads the same directives before the header.
  auto count = [&](const fs::path& p, const std::vector<fs::path>& dirs) {
    if (known.contains(named(p))) return;
    const SourceScan theirs = scan(h.m.fs, p, dirs, e.tree);
    if (theirs.reaches_header && theirs.prefix == e.found.prefix) known.insert(named(p));
  };
  if (known.size() < kMakeAt)
    if (auto ninja = h.m.fs.read_file(h.cwd / "build.ninja", 8u << 20))
      for (const auto& other : sibling_sources(*ninja, h.source)) count(h.absolute(other), e.project_dirs);
  // The other extensions of a build that planned them (a DeepSpeed op's first file would
  // otherwise not know that later ops' files share its header); only files inside the tree.
  if (known.size() < kMakeAt && !e.tree.empty())
    if (auto plan = h.m.fs.read_file(e.tree / kPlanFile, 4u << 20))
      for (const auto& other : planned_alike(*plan, extension_name(h.line), e.tree, consulted)) {
        const fs::path p = e.tree / other.source;
        if (!probe::is_within(p, e.tree)) continue;
        std::vector<fs::path> dirs;
        for (const auto& d : other.include_dirs)
          if (probe::is_within(e.tree / d, e.tree)) dirs.push_back(e.tree / d);
        count(p, dirs);
        if (known.size() >= kMakeAt) break;
      }
  if (known.size() >= kMakeAt) return true;
  if (!recorded) (void)h.m.fs.append_file(entry.wanted, me + "\n");
  return false;
}

/// Makes the header in the entry (under its lock), anything a compile left there before removed
/// first: the header, its `.gch`, its dependencies for -MD and -MMD compiles, the check that torch's headers leave the
/// prefix's macros alone, and the `done` mark with the seconds it took and the `.gch`'s size.
Status make_header(const HostCompile& h, const Eligible& e, const EntryFiles& entry) {
  const auto t0 = std::chrono::steady_clock::now();
  probe::FileSystem& fs = h.m.fs;
  (void)fs.remove_all(entry.dir);
  OPFORGE_CHECK(fs.create_directories(entry.dir));
  OPFORGE_CHECK(fs.write_file_atomic(entry.header, header_text(e.found.prefix)));
  auto run = [&](const std::vector<std::string>& tail) -> Status {
    probe::Command c;
    c.argv.push_back(h.in.compiler.string());
    c.argv.insert(c.argv.end(), entry.key_args.begin(), entry.key_args.end());
    c.argv.insert(c.argv.end(), tail.begin(), tail.end());
    c.cwd = h.cwd;
    auto r = h.m.proc.run(c);
    if (!r) return opforge::unexpected(r.error());
    if (!r->ok()) return failure(first_error(r->err + r->out));
    return {};
  };
  OPFORGE_CHECK(run({"-g0", "-x", "c++-header", entry.header.string(), "-o", (entry.dir / "extension.h.gch").string(),
                     "-MD", "-MF", (entry.dir / "deps.all").string()}));
  // The macros it leaves defined (and the user headers it reads, for -MMD compiles).
  OPFORGE_CHECK(run({"-g0", "-x", "c++-header", "-E", "-dM", entry.header.string(), "-o",
                     (entry.dir / "header.dM").string(), "-MMD", "-MF", (entry.dir / "deps.user").string()}));
  if (!e.found.macros.empty()) {
    // The file's own lines before the include run again after the forced header: a macro of
    // theirs that torch's headers then change would be set back.
    const fs::path alone = entry.dir / "prefix.h";
    OPFORGE_CHECK(fs.write_file_atomic(alone, strings::join(e.found.prefix, "\n") + "\n"));
    OPFORGE_CHECK(run({"-x", "c++-header", "-E", "-dM", alone.string(), "-o", (entry.dir / "prefix.dM").string()}));
    auto before = fs.read_file(entry.dir / "prefix.dM");
    auto after = fs.read_file(entry.dir / "header.dM");
    if (!before) return opforge::unexpected(before.error());
    if (!after) return opforge::unexpected(after.error());
    if (auto clash = macro_clash(*before, *after, e.found.macros); !clash.empty()) return failure(clash);
  }
  (void)fs.remove(entry.dir / "header.dM");
  (void)fs.remove(entry.dir / "prefix.dM");
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const auto gch = fs.stamp(entry.dir / "extension.h.gch");
  OPFORGE_CHECK(fs.write_file_atomic(entry.dir / cache::kLastUse, ""));
  OPFORGE_CHECK(probe::record_size(fs, entry.dir, probe::tree_bytes(fs, entry.dir)));
  OPFORGE_CHECK(
      fs.write_file_atomic(entry.done, std::to_string(secs) + "\t" + std::to_string(gch ? gch->size : 0) + "\n"));
  return {};
}

/// The entry's files for this compile's key.
EntryFiles entry_files(const HostCompile& h, const Eligible& e, const std::set<std::string>& consulted) {
  EntryFiles entry;
  entry.key_args = without_project_macros(header_args(h.line, e.tree), consulted);
  entry.dir = h.in.pch_dir / entry_key(h.m.fs, h.in.compiler, entry.key_args, e.torch_dir, e.found.prefix);
  entry.header = entry.dir / "extension.h";
  entry.done = entry.dir / "done";
  entry.failed = entry.dir / "failed";
  entry.wanted = h.in.pch_dir / ("." + entry.dir.filename().string() + ".wanted");
  return entry;
}

/// Whether the header is there to compile with: made before, or made now, under the entry's lock,
/// once enough compiles want it. When not, the log says why (this compile then goes on without it,
/// as do the others while it is being made).
bool header_ready(const HostCompile& h, const Eligible& e, const EntryFiles& entry,
                  const std::set<std::string>& consulted) {
  probe::FileSystem& fs = h.m.fs;
  if (fs.type_of(entry.failed) == probe::FileType::regular) {
    auto why = fs.read_file(entry.failed);
    h.log("skipped", "the header could not be made: " + std::string(strings::trim(why ? *why : std::string())));
    return false;
  }
  if (fs.type_of(entry.done) == probe::FileType::regular) return true;
  if (!wanted_by_enough(h, e, entry, consulted)) {
    h.log("first", "");
    return false;
  }
  auto lock = fs.try_lock(cache::entry_lock(entry.dir));
  if (!lock || !*lock) {
    h.log("busy", "");
    return false;
  }
  if (fs.type_of(entry.done) == probe::FileType::regular) return true;  // made while this one waited for the lock
  if (auto made = make_header(h, e, entry); !made) {
    (void)fs.write_file_atomic(entry.failed, made.error().message + "\n");
    h.log("skipped", "the header could not be made: " + made.error().message);
    return false;
  }
  (void)fs.remove(entry.wanted);
  auto stats = fs.read_file(entry.done);
  auto f = strings::split(strings::trim(stats ? *stats : std::string()), '\t');
  // Logged now: the compile that made it may still not use it (a macro it defines first).
  h.log("made", f.empty() ? "0" : f[0], f.size() > 1 ? f[1] : "0");
  return true;
}

/// Compiles with the header (holding the entry shared, so that `opforge cache prune` waits): false
/// when it cannot be tried or fails (it is then compiled plainly), else true once its output went
/// to the console, less gcc's -Winvalid-pch lines, and its outcome to the log.
bool compile_with_header(const HostCompile& h, const EntryFiles& entry, const std::set<std::string>& consulted,
                         const fs::path& consulted_file) {
  auto shared = h.m.fs.try_lock_shared(cache::entry_lock(entry.dir));
  if (!shared || !*shared) return false;
  (void)h.m.fs.write_file_atomic(entry.dir / cache::kLastUse, "");
  auto r = h.m.proc.run(h.command({"-include", entry.header.string(), "-Winvalid-pch"}));
  if (!r) return false;
  std::string reason;
  const std::string out = drop_pch_warnings(r->out, reason), err = drop_pch_warnings(r->err, reason);
  if (!r->ok()) {
    h.log("fallback", first_error(r->err + r->out));
    h.console.err("opforge: " + h.source +
                  ": the compile with the precompiled torch header failed; compiling it without\n");
    return false;
  }
  h.console.out(out);
  h.console.err(err);
  if (!reason.empty()) {
    h.log("not-used", reason);
    // A macro the header read, left out of its key as the project's: in the key from now on.
    if (auto name = macro_in_reason(reason); !name.empty() && !consulted.contains(name)) {
      auto text = h.m.fs.read_file(consulted_file, 1u << 20);
      (void)h.m.fs.write_file_atomic(consulted_file, (text ? *text : std::string()) + name + "\n");
    }
  } else {
    h.log("used", "");
  }
  return true;
}

/// The compile's -MD/-MMD file gains the headers the precompiled one stands for.
void merge_dependencies(const HostCompile& h, const EntryFiles& entry) {
  if (h.line.deps == CompileLine::Deps::none || h.line.depfile.empty()) return;
  const fs::path depfile = h.absolute(h.line.depfile);
  auto mine = h.m.fs.read_file(depfile);
  auto theirs = h.m.fs.read_file(entry.dir / (h.line.deps == CompileLine::Deps::all ? "deps.all" : "deps.user"));
  if (mine && theirs) (void)h.m.fs.write_file_atomic(depfile, merge_depfile(*mine, *theirs, entry.header.string()));
}

}  // namespace

int host_compile(probe::Machine m, const std::vector<std::string>& argv, const Console& console) {
  auto in = read_invocation(argv);
  if (!in) {
    console.err("opforge: " + std::string(kCommand) +
                ": --compiler PATH -- ARGS... expected (the host wrappers run this)\n");
    return 2;
  }
  HostCompile h{.m = m, .console = console, .in = std::move(*in)};
  h.cwd = m.fs.canonical(".").value_or(fs::path("."));
  h.log_path = settings::pch_log(m.env);
  h.line = parse(h.in.args);
  h.source = h.line.sources.empty() ? std::string() : h.line.sources[0];

  auto decided = eligible(h);
  if (auto* keep = std::get_if<Keep>(&decided)) {
    if (!keep->what.empty()) h.log(keep->what, keep->detail);
    return h.plain();
  }
  const auto& e = std::get<Eligible>(decided);

  const fs::path consulted_file = h.in.pch_dir / ".consulted";
  const std::set<std::string> consulted = read_consulted(m.fs, consulted_file);
  const EntryFiles entry = entry_files(h, e, consulted);
  if (!header_ready(h, e, entry, consulted)) return h.plain();
  if (!compile_with_header(h, entry, consulted, consulted_file)) return h.plain();
  merge_dependencies(h, entry);
  return 0;
}

Console process_console() {
  return {.out = [](std::string_view text) { std::cout << text << std::flush; },
          .err = [](std::string_view text) { std::cerr << text << std::flush; }};
}

int host_compile(probe::Machine m, const std::vector<std::string>& argv) {
  return host_compile(m, argv, process_console());
}

}  // namespace opforge::compile::pch
