/// `opforge __host-compile` (compile/pch/pch.h): one host compile, with the precompiled torch header
/// when it may, the header made once enough compiles are known to need it.
#include <chrono>
#include <iostream>

#include "cache/layout.h"
#include "compile/pch/detail.h"
#include "compile/pch/pch.h"
#include "probe/links.h"
#include "settings/settings.h"
#include "util/strings.h"

namespace opforge::compile::pch {

int host_compile(probe::Machine m, const std::vector<std::string>& argv) {
  fs::path compiler, pch_dir;
  std::string launcher;
  std::vector<std::string> args;
  for (std::size_t i = 0; i < argv.size(); ++i) {
    if (argv[i] == "--") {
      args.assign(argv.begin() + static_cast<long>(i) + 1, argv.end());
      break;
    }
    if (i + 1 >= argv.size()) break;
    if (argv[i] == "--compiler") compiler = argv[++i];
    else if (argv[i] == "--pch-dir") pch_dir = argv[++i];
    else if (argv[i] == "--launcher") launcher = argv[++i];
  }
  if (compiler.empty()) {
    std::cerr << "opforge: " << kCommand << ": --compiler PATH -- ARGS... expected (the host wrappers run this)\n";
    return 2;
  }
  const auto cwd = m.fs.canonical(".").value_or(fs::path("."));
  auto command = [&](std::vector<std::string> extra) {
    probe::Command c;
    if (!launcher.empty()) c.argv.push_back(launcher);
    c.argv.push_back(compiler.string());
    c.argv.insert(c.argv.end(), args.begin(), args.end());
    c.argv.insert(c.argv.end(), extra.begin(), extra.end());
    c.argv.push_back("-g0");
    return c;
  };
  const auto log_path = settings::pch_log(m.env);
  const CompileLine line = parse(args);
  const std::string source = line.sources.empty() ? std::string() : line.sources[0];
  auto log = [&](std::string_view what, std::string_view detail, std::string_view more = {}) {
    if (!log_path) return;
    std::string l = std::string(what) + "\t" + source + "\t" + std::string(detail);
    if (!more.empty()) l += "\t" + std::string(more);
    for (auto& ch : l)
      if (ch == '\n') ch = ' ';
    (void)m.fs.append_file(*log_path, l + "\n");
  };
  auto plain = [&]() {
    auto c = command({});
    c.output = probe::Output::inherit;
    auto r = m.proc.run(c);
    if (!r) {
      std::cerr << "opforge: cannot run " << compiler.string() << ": " << r.error().render() << "\n";
      return 127;
    }
    return r->signal ? 128 + r->signal : r->exit_code;
  };
  if (pch_dir.empty() || !not_eligible(line).empty()) return plain();
  const fs::path torch_dir = torch_include_dir(m.fs, line, cwd);
  if (torch_dir.empty()) return plain();
  const fs::path tree = settings::pch_tree(m.env);
  std::vector<fs::path> project_dirs;
  for (const auto& d : line.include_dirs) {
    const fs::path dir = fs::path(d).is_absolute() ? fs::path(d) : cwd / d;
    if (tree.empty() || probe::is_within(dir, tree)) project_dirs.push_back(dir);
  }
  const fs::path src_path = fs::path(source).is_absolute() ? fs::path(source) : cwd / source;
  const SourceScan found = scan(m.fs, src_path, project_dirs, tree);
  if (!found.reaches_header) {
    if (found.why_not.starts_with("does not include")) {
      log("plain", "");
      return plain();
    }
    log("skipped", found.why_not);
    return plain();
  }
  // A project folder that holds a name torch's headers include would be shadowed by the header
  // made without it.
  for (const auto& d : tree.empty() ? std::vector<fs::path>{} : project_dirs)
    for (const char* top : {"torch", "ATen", "c10", "caffe2", "pybind11", "Python.h"})
      if (m.fs.type_of(d / top) != probe::FileType::none && d != torch_dir) {
        log("skipped",
            "the project's include folder " + d.string() + " holds " + top + ", which torch's headers include");
        return plain();
      }

  // Macros gcc has named as read by a header made without them (see without_project_macros).
  const fs::path consulted_file = pch_dir / ".consulted";
  std::set<std::string> consulted;
  if (auto text = m.fs.read_file(consulted_file, 1u << 20))
    for (auto l : strings::split(*text, '\n'))
      if (!strings::trim(l).empty()) consulted.insert(std::string(strings::trim(l)));
  const auto key_args = without_project_macros(header_args(line, tree), consulted);
  const fs::path entry = pch_dir / entry_key(m.fs, compiler, key_args, torch_dir, found.prefix);
  const fs::path header = entry / "extension.h", done = entry / "done", failed = entry / "failed";
  if (m.fs.type_of(failed) == probe::FileType::regular) {
    auto why = m.fs.read_file(failed);
    log("skipped", "the header could not be made: " + std::string(strings::trim(why ? *why : std::string())));
    return plain();
  }
  // Sources by their path in the scratch tree: a second build of the same project counts once.
  auto named = [&](const fs::path& p) {
    return !tree.empty() && probe::is_within(p, tree)
               ? p.lexically_normal().lexically_relative(tree.lexically_normal()).string()
               : p.lexically_normal().string();
  };
  const fs::path wanted = pch_dir / ("." + entry.filename().string() + ".wanted");
  if (m.fs.type_of(done) != probe::FileType::regular) {
    // Made once kMakeAt compiles are known to need it: those that wanted it before, and this
    // extension's files that read the same before torch's header; until then a compile goes on
    // without it, as do the others while it is being made.
    (void)m.fs.create_directories(pch_dir);
    std::set<std::string> known;
    auto before = m.fs.read_file(wanted, 1u << 20);
    for (auto l : strings::split(before ? *before : std::string(), '\n'))
      if (!l.empty()) known.insert(std::string(l));
    const std::string me = named(src_path);
    const bool recorded = known.contains(me);
    known.insert(me);
    // Another file counts when it reads the same directives before the header.
    auto count = [&](const fs::path& p, const std::vector<fs::path>& dirs) {
      if (known.contains(named(p))) return;
      const SourceScan theirs = scan(m.fs, p, dirs, tree);
      if (theirs.reaches_header && theirs.prefix == found.prefix) known.insert(named(p));
    };
    if (known.size() < kMakeAt)
      if (auto ninja = m.fs.read_file(cwd / "build.ninja", 8u << 20))
        for (const auto& other : sibling_sources(*ninja, source))
          count(fs::path(other).is_absolute() ? fs::path(other) : cwd / other, project_dirs);
    // The other extensions of a build that planned them (a DeepSpeed op's first file would
    // otherwise not know that later ops' files share its header); only files inside the tree.
    if (known.size() < kMakeAt && !tree.empty())
      if (auto plan = m.fs.read_file(tree / kPlanFile, 4u << 20))
        for (const auto& other : planned_alike(*plan, extension_name(line), tree, consulted)) {
          const fs::path p = tree / other.source;
          if (!probe::is_within(p, tree)) continue;
          std::vector<fs::path> dirs;
          for (const auto& d : other.include_dirs)
            if (probe::is_within(tree / d, tree)) dirs.push_back(tree / d);
          count(p, dirs);
          if (known.size() >= kMakeAt) break;
        }
    if (known.size() < kMakeAt) {
      if (!recorded) (void)m.fs.append_file(wanted, me + "\n");
      log("first", "");
      return plain();
    }
    auto lock = m.fs.try_lock(cache::entry_lock(entry));
    if (!lock || !*lock) {
      log("busy", "");
      return plain();
    }
    if (m.fs.type_of(done) != probe::FileType::regular) {
      const auto t0 = std::chrono::steady_clock::now();
      (void)m.fs.remove_all(entry);
      auto made = [&]() -> Status {
        OPFORGE_CHECK(m.fs.create_directories(entry));
        OPFORGE_CHECK(m.fs.write_file_atomic(header, header_text(found.prefix)));
        auto run = [&](std::vector<std::string> tail) -> Status {
          probe::Command c;
          c.argv.push_back(compiler.string());
          c.argv.insert(c.argv.end(), key_args.begin(), key_args.end());
          c.argv.insert(c.argv.end(), tail.begin(), tail.end());
          c.cwd = cwd;
          auto r = m.proc.run(c);
          if (!r) return opforge::unexpected(r.error());
          if (!r->ok()) return failure(first_error(r->err + r->out));
          return {};
        };
        OPFORGE_CHECK(run({"-g0", "-x", "c++-header", header.string(), "-o", (entry / "extension.h.gch").string(),
                           "-MD", "-MF", (entry / "deps.all").string()}));
        // The macros it leaves defined (and the user headers it reads, for -MMD compiles).
        OPFORGE_CHECK(run({"-g0", "-x", "c++-header", "-E", "-dM", header.string(), "-o",
                           (entry / "header.dM").string(), "-MMD", "-MF", (entry / "deps.user").string()}));
        if (!found.macros.empty()) {
          // The file's own lines before the include run again after the forced header: a macro of
          // theirs that torch's headers then change would be set back.
          const fs::path alone = entry / "prefix.h";
          OPFORGE_CHECK(m.fs.write_file_atomic(alone, strings::join(found.prefix, "\n") + "\n"));
          OPFORGE_CHECK(run({"-x", "c++-header", "-E", "-dM", alone.string(), "-o", (entry / "prefix.dM").string()}));
          auto before = m.fs.read_file(entry / "prefix.dM");
          auto after = m.fs.read_file(entry / "header.dM");
          if (!before) return opforge::unexpected(before.error());
          if (!after) return opforge::unexpected(after.error());
          if (auto clash = macro_clash(*before, *after, found.macros); !clash.empty()) return failure(clash);
        }
        (void)m.fs.remove(entry / "header.dM");
        (void)m.fs.remove(entry / "prefix.dM");
        const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        const auto gch = m.fs.stamp(entry / "extension.h.gch");
        OPFORGE_CHECK(m.fs.write_file_atomic(entry / cache::kLastUse, ""));
        OPFORGE_CHECK(probe::record_size(m.fs, entry, probe::tree_bytes(m.fs, entry)));
        OPFORGE_CHECK(
            m.fs.write_file_atomic(done, std::to_string(secs) + "\t" + std::to_string(gch ? gch->size : 0) + "\n"));
        return {};
      }();
      if (!made) {
        (void)m.fs.write_file_atomic(failed, made.error().message + "\n");
        log("skipped", "the header could not be made: " + made.error().message);
        return plain();
      }
      (void)m.fs.remove(wanted);
      auto stats = m.fs.read_file(done);
      auto f = strings::split(strings::trim(stats ? *stats : std::string()), '\t');
      // Logged now: the compile that made it may still not use it (a macro it defines first).
      log("made", f.empty() ? "0" : f[0], f.size() > 1 ? f[1] : "0");
    }
  }
  // Held shared while compiling with it, so that `opforge cache prune` waits.
  auto shared = m.fs.try_lock_shared(cache::entry_lock(entry));
  if (!shared || !*shared) return plain();
  (void)m.fs.write_file_atomic(entry / cache::kLastUse, "");
  auto c = command({"-include", header.string(), "-Winvalid-pch"});
  auto r = m.proc.run(c);
  if (!r) return plain();
  std::string reason;
  const std::string out = drop_pch_warnings(r->out, reason), err = drop_pch_warnings(r->err, reason);
  if (!r->ok()) {
    log("fallback", first_error(r->err + r->out));
    std::cerr << "opforge: " << source
              << ": the compile with the precompiled torch header failed; compiling it without\n";
    return plain();
  }
  std::cout << out << std::flush;
  std::cerr << err << std::flush;
  if (!reason.empty()) {
    log("not-used", reason);
    // A macro the header read, left out of its key as the project's: in the key from now on.
    if (auto name = macro_in_reason(reason); !name.empty() && !consulted.contains(name)) {
      auto text = m.fs.read_file(consulted_file, 1u << 20);
      (void)m.fs.write_file_atomic(consulted_file, (text ? *text : std::string()) + name + "\n");
    }
  } else {
    log("used", "");
  }
  if (line.deps != CompileLine::Deps::none && !line.depfile.empty()) {
    const fs::path depfile = fs::path(line.depfile).is_absolute() ? fs::path(line.depfile) : cwd / line.depfile;
    auto mine = m.fs.read_file(depfile);
    auto theirs = m.fs.read_file(entry / (line.deps == CompileLine::Deps::all ? "deps.all" : "deps.user"));
    if (mine && theirs) (void)m.fs.write_file_atomic(depfile, merge_depfile(*mine, *theirs, header.string()));
  }
  return 0;
}

}  // namespace opforge::compile::pch
