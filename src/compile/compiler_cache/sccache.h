#pragma once
/// sccache as a build's compiler cache, and sccache-dist behind it: each build runs a client
/// server of its own on a private port, started before the first compile and stopped when the
/// build ends (an idle timeout stops it too if opforge itself is killed), so no daemon outlives a
/// build and one build's counters are its own. With a scheduler ([build] scheduler) the compile
/// steps go to its build servers; a scheduler that cannot be reached or has no server is found
/// out before the build starts, and the build then compiles here and says so in one line.
/// Every access to the machine goes through probe::Machine.
#include <atomic>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "probe/machine.h"
#include "util/error.h"

namespace opforge::compile {

/// What one build's sccache did (`sccache --show-stats --stats-format json`).
struct SccacheStats {
  int requests = 0;                                    ///< compile_requests: compiler calls that went through sccache
  int compilations = 0;                                ///< compilations: steps that ran (not served from the cache)
  int hits = 0;                                        ///< cache_hits, every language
  int misses = 0;                                      ///< cache_misses, every language
  std::map<std::string, int> servers;                  ///< dist_compiles: build server → steps it compiled
  int dist_errors = 0;                                 ///< distributed compiles that failed and ran here instead
  int remote() const;                                  ///< steps compiled on build servers
  int local() const;                                   ///< steps compiled here
  SccacheStats& operator+=(const SccacheStats& more);  ///< two commands' counters, as one build's
};
/// nullopt for anything that is not sccache's JSON statistics.
std::optional<SccacheStats> parse_sccache_stats(std::string_view json);
/// "sccache: 9 compile steps: 4 on 127.0.0.1:10502, 2 on 127.0.0.1:10501, 3 here; 2 cache hits"
std::string describe_sccache_stats(const SccacheStats& stats);

/// What `sccache --dist-status` says of the scheduler.
struct SchedulerStatus {
  enum class State { connected, not_connected, disabled, unknown } state = State::unknown;
  std::string url;
  int servers = 0, cpus = 0, in_progress = 0;
  std::string detail;  ///< sccache's own words when not connected
};
SchedulerStatus parse_dist_status(std::string_view json);

/// The distribution a build asks for: the scheduler's URL and its client token (never printed,
/// recorded or logged: it lives only in a private file for the build's sccache, removed after).
struct SccacheSetup {
  std::string scheduler{};  ///< empty: compile here (or as the user's SCCACHE_CONF says)
  std::string token{};
  std::filesystem::path sccache = "sccache";  ///< the program
  std::filesystem::path compiler = "gcc";     ///< the C compiler of the test compile on the servers
  std::filesystem::path work{};               ///< a private folder for the session's files
  /// Where sccache's server writes its errors (SCCACHE_ERROR_LOG): the build folder's, which
  /// outlives the session, so that a message may name it. Empty: in `work`, removed with it, and
  /// then never named.
  std::filesystem::path error_log{};
  /// Where sccache packs the toolchains it sends to build servers ([dist] cache_dir): opforge's
  /// cache folder's, so that nothing lands in HOME. Empty: in `work`.
  std::filesystem::path dist_cache{};
  /// Whether start_sccache compiles a test file on the servers; false: it only asks the scheduler
  /// (`opforge plan` and `doctor`, which compile nothing).
  bool test_compile = true;
};

/// The scheduler's URL and token from the recipe and the environment: bad_input when the recipe
/// names a scheduler without a token (neither OPFORGE_SCHEDULER_TOKEN nor scheduler_token_file).
Result<SccacheSetup> sccache_setup(probe::Machine m, const std::string& scheduler,
                                   const std::filesystem::path& token_file);

/// One build's sccache: its private folder (the client config with the token, 0600; the server's
/// socket and log), the variables every compile gets, and what the build does about distribution.
/// The client server lives inside the build's own command (wrap()), so the process runner's
/// watchdog ends it with the build, however the build ends: no daemon outlives it.
class SccacheSession {
 public:
  SccacheSession(probe::Machine m, SccacheSetup setup);
  ~SccacheSession();  ///< removes the private folder, and the token's file with it
  SccacheSession(const SccacheSession&) = delete;
  SccacheSession& operator=(const SccacheSession&) = delete;
  /// The variables the build's commands get: the server's socket, its log. Never its
  /// configuration, which holds the scheduler's token: only the server is given that
  /// (server_conf_), and a compile's sccache reads none (compile_launcher).
  const std::map<std::string, std::string>& env() const { return env_; }
  /// What the build does ("sccache: 2 build servers, 4 CPUs at http://...: compile steps go
  /// there"; or why every step compiles here).
  const std::string& said() const { return said_; }
  bool distributed() const { return distributed_; }
  /// What the scheduler said of itself (state unknown without a scheduler).
  const SchedulerStatus& scheduler() const { return status_; }
  /// `argv` (ninja, a project's build command) run between the start of a server of its own and
  /// its stop, its statistics written to a file of the private folder first; the exit code is
  /// argv's. A build may wrap several commands (DeepSpeed's ops one by one, at the same time, then
  /// setup.py): each gets its own server socket. Safe to call from several threads.
  std::vector<std::string> wrap(const std::vector<std::string>& argv);
  /// The statistics of every wrapped command that ran, and of the server serve() ran, summed
  /// (nullopt when sccache wrote none).
  std::optional<SccacheStats> stats() const;
  /// For a build whose compiles come from several commands at once (a command build's ops): one
  /// client server for all of them, at env()'s socket, from now until stop() or the session's end
  /// (sccache's disk cache takes one server at a time). It runs inside a command of its own, on a
  /// thread, so the process runner ends it with opforge however opforge ends. unsatisfied when it
  /// does not start within 60 s.
  Status serve();
  /// Ends what serve() started, its statistics kept first; nothing when it runs no server.
  void stop();

 private:
  friend Result<std::unique_ptr<SccacheSession>> start_sccache(probe::Machine m, SccacheSetup setup);
  /// Why the server did not start: sccache's own words (start.log) with a hint that fits them.
  opforge::unexpected<Error> not_started(bool missing) const;
  probe::Machine m_;
  SccacheSetup setup_;
  std::map<std::string, std::string> env_;
  std::filesystem::path server_conf_;  ///< the server's configuration, 0600 (empty: the user's own)
  std::string said_;
  bool distributed_ = false;
  SchedulerStatus status_;
  std::atomic<int> wrapped_ = 0;  ///< commands wrapped so far: each writes stats-<n>.json
  std::jthread server_;           ///< serve()'s command
};

/// Makes the session: its private folder, and with a scheduler its config (0600), then asks the
/// scheduler for its servers and compiles a one-line C file there (a short-lived server of the
/// session's, stopped at once), and falls back to compiling here (said() tells why) when the
/// scheduler cannot be reached, does not answer in 40 s, has no server, or the test compile did
/// not run on a build server (a wrong token, a toolchain that cannot be sent, a dead server: some
/// of these make sccache fail a CUDA step instead of compiling it here). unsatisfied when sccache is not installed or
/// its server does not start.
Result<std::unique_ptr<SccacheSession>> start_sccache(probe::Machine m, SccacheSetup setup);

/// How many compiles a build whose steps go to build servers runs at once: as many as the
/// servers have CPUs, never fewer than `jobs` (the plan's, for this machine). Each step still
/// preprocesses here (gcc -E, nvcc's cudafe++): at most one per kLocalStepKib of `available_kib`,
/// and at most settings::kMaxJobs.
inline constexpr std::uint64_t kLocalStepKib = 1024 * 1024;
unsigned distributed_jobs(unsigned jobs, int scheduler_cpus, std::optional<std::uint64_t> available_kib);
/// ", 64 compiles at once (the servers' CPUs; -j N to choose)" when `jobs` is more than the plan's; "".
std::string distributed_jobs_said(unsigned jobs, unsigned plan_jobs);

/// What a scheduler says of itself now, and so what a build will do: for `opforge plan` and
/// `doctor`, which compile nothing (a client server of its own, stopped at once).
struct SchedulerView {
  std::string url;
  std::string state = "unknown";  ///< "connected", "not connected", "disabled", "unknown"
  int servers = 0, cpus = 0;
  std::string said;  ///< "2 build servers, 4 CPUs at URL: compile steps go there", or why not
};
SchedulerView ask_scheduler(probe::Machine m, const std::string& scheduler, const std::filesystem::path& token_file);

}  // namespace opforge::compile
