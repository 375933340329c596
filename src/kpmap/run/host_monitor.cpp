// SPDX-License-Identifier: BSD-3-Clause
#include <kpmap/run/host_monitor.hpp>

#include <kpmap/base/detail/finalize.hpp>
#include <kpmap/base/detail/mpi_util.hpp>
#include <kpmap/base/error.hpp>
#include <kpmap/run/watchdog.hpp>
#include <kpmap/runtime/runtime.hpp>
#include <kpmap/transport/host.hpp>

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>

namespace kpmap {

namespace {

constexpr std::uint32_t hello_magic = 0x4b504d48;  // "KPMH"
constexpr int max_addresses = 8;
constexpr char beat_byte = 'h';
constexpr char bye_byte = 'b';    // this host finished its run
constexpr char abort_byte = 'x';  // this host ends the job on purpose (an error it reports)
// The launcher is ending this host's ranks (a SIGTERM while no host is
// silent: another rank failed, and says so itself, or the launcher says which):
// its connection closing next is that end, not a failure of this host's own.
constexpr char ending_byte = 'e';

// The monitor of this process, for the farewell of an abort.
std::atomic<HostMonitor*> g_monitor{nullptr};

// The line lost() would print for the silent host, kept ready by the watching
// thread while a host is silent, for the SIGTERM handler to print as it ends
// the process (two buffers: the thread fills the one not shown).
struct ReadyLine {
  char text[2][2048] = {};
  std::size_t length[2] = {};
  std::atomic<int> shown{-1};  // -1: no host is silent
};
ReadyLine g_ready;

using detail::steady_seconds;

struct Endpoint {
  std::uint32_t address[max_addresses];  // IPv4, network byte order
  std::int32_t count;
  std::uint32_t port;  // network byte order, in the low 16 bits
};

struct Hello {
  std::uint32_t magic;
  std::uint32_t host;
  std::uint64_t key;
};

struct RankInfo {
  std::int32_t host;
  char name[MPI_MAX_PROCESSOR_NAME];
};

// This host's IPv4 addresses that another host may reach: up, not loopback.
Endpoint local_addresses() {
  Endpoint e{};
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return e;
  for (ifaddrs* a = list; a != nullptr && e.count < max_addresses; a = a->ifa_next) {
    if (a->ifa_addr == nullptr || a->ifa_addr->sa_family != AF_INET) continue;
    if ((a->ifa_flags & IFF_UP) == 0 || (a->ifa_flags & IFF_LOOPBACK) != 0) continue;
    e.address[e.count++] = reinterpret_cast<sockaddr_in*>(a->ifa_addr)->sin_addr.s_addr;
  }
  freeifaddrs(list);
  return e;
}

bool wait_for(int fd, short events, double deadline) {
  for (;;) {
    const int ms = static_cast<int>(std::max(0.0, (deadline - steady_seconds()) * 1000));
    pollfd p{fd, events, 0};
    const int r = ::poll(&p, 1, ms);
    if (r > 0) return true;
    if (r == 0 || errno != EINTR) return false;
  }
}

bool send_all(int fd, const void* data, std::size_t n, double deadline) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    const ssize_t k = ::send(fd, p, n, MSG_NOSIGNAL);
    if (k > 0) {
      p += k;
      n -= static_cast<std::size_t>(k);
    } else if (k < 0 && (errno == EAGAIN || errno == EINTR)) {
      if (!wait_for(fd, POLLOUT, deadline)) return false;
    } else {
      return false;
    }
  }
  return true;
}

bool recv_all(int fd, void* data, std::size_t n, double deadline) {
  char* p = static_cast<char*>(data);
  while (n > 0) {
    if (!wait_for(fd, POLLIN, deadline)) return false;
    const ssize_t k = ::recv(fd, p, n, 0);
    if (k > 0) {
      p += k;
      n -= static_cast<std::size_t>(k);
    } else if (k == 0 || (errno != EAGAIN && errno != EINTR)) {
      return false;
    }
  }
  return true;
}

// One byte to a peer, never blocking, never raising SIGPIPE.
void send_byte(int fd, char byte) noexcept {
  [[maybe_unused]] const auto n = ::send(fd, &byte, 1, MSG_DONTWAIT | MSG_NOSIGNAL);
}

int nonblocking_socket() {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd >= 0) {
    const int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  }
  return fd;
}

// Connects to one of `to`'s addresses within `seconds` each; -1 if none answers.
int connect_any(const Endpoint& to, double seconds) {
  for (int i = 0; i < to.count; ++i) {
    const int fd = nonblocking_socket();
    if (fd < 0) return -1;
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = to.address[i];
    a.sin_port = static_cast<in_port_t>(to.port);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0) return fd;
    if (errno == EINPROGRESS && wait_for(fd, POLLOUT, steady_seconds() + seconds)) {
      int err = 0;
      socklen_t len = sizeof err;
      if (::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) == 0 && err == 0) return fd;
    }
    ::close(fd);
  }
  return -1;
}

}  // namespace

void host_monitor_farewell() noexcept {
  HostMonitor* m = g_monitor.load(std::memory_order_acquire);
  if (m == nullptr) return;
  for (const auto& p : m->peers_) send_byte(p.fd, abort_byte);
}

// StopSignals' SIGTERM hook (async-signal-safe): where a host is silent, the
// launcher ends this rank because it found that host lost; where none is, it
// ends this rank for another's failure, which the peers must not report.
void host_monitor_on_launcher_end() noexcept {
  const int i = g_ready.shown.load(std::memory_order_acquire);
  if (i < 0) {
    if (HostMonitor* m = g_monitor.load(std::memory_order_acquire)) {
      for (const auto& p : m->peers_) send_byte(p.fd, ending_byte);
    }
    return;
  }
  detail::end_process(g_ready.text[i], g_ready.length[i], exit_code::failure);
}

double HostMonitor::timeout_from_environment() {
  return seconds_from_environment("KPMAP_HOST_TIMEOUT", 60.0,
                                  "the seconds a host may stay silent before the job ends "
                                  "(>= 0; 0 turns the check off)");
}

HostMonitor::HostMonitor(MPI_Comm comm, double timeout, const StopSignals* signals,
                         const Liveness* record)
    : timeout_(timeout), signals_(signals), record_(record != nullptr ? *record : own_) {
  int size = 1;
  MPI_Comm_rank(comm, &rank_);
  MPI_Comm_size(comm, &size);
  // Hosts: the Runtime's nodes (the ranks that share memory, numbered in
  // order of their first rank), whose first ranks keep the ring.
  const Runtime& rt = Runtime::current();
  const int first = rt.node_rank() == 0 ? 1 : 0;
  RankInfo mine{};
  mine.host = rt.node_index();
  int len = 0;
  MPI_Get_processor_name(mine.name, &len);  // the name the launcher's messages use
  std::vector<RankInfo> all(static_cast<std::size_t>(size));
  MPI_Allgather(&mine, sizeof mine, MPI_BYTE, all.data(), sizeof mine, MPI_BYTE, comm);
  for (int r = 0; r < size; ++r) {
    const auto h = static_cast<std::size_t>(all[static_cast<std::size_t>(r)].host);
    if (h >= host_names_.size()) {
      host_names_.resize(h + 1);
      host_ranks_.resize(h + 1);
    }
    if (host_ranks_[h].empty()) host_names_[h] = all[static_cast<std::size_t>(r)].name;
    host_ranks_[h].push_back(r);
  }
  if (hosts() < 2 || timeout_ <= 0) return;
  connect_ring(comm, first == 1 ? mine.host : -1);
}

void HostMonitor::connect_ring(MPI_Comm comm, int my_host) {
  const bool leader = my_host >= 0;
  MPI_Comm leaders = MPI_COMM_NULL;
  MPI_Comm_split(comm, leader ? 0 : MPI_UNDEFINED, rank_, &leaders);
  // A key of this job's, so that a connection from anything else is refused.
  std::uint64_t key = 0;
  if (rank_ == 0) {
    std::random_device random;
    key = (std::uint64_t{random()} << 32) ^ random();
  }
  transport::host_bcast(&key, 1, 0, comm);
  std::string failure;
  if (leader) {
    const int n = hosts();
    const int listener = nonblocking_socket();
    Endpoint me = local_addresses();
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_ANY);
    socklen_t len = sizeof a;
    if (listener < 0 || ::bind(listener, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
        ::listen(listener, 8) != 0 ||
        ::getsockname(listener, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
      failure = std::string("cannot listen on a TCP port: ") + std::strerror(errno);
      me.count = 0;
    }
    me.port = a.sin_port;
    if (failure.empty() && me.count == 0) failure = "no network address other than loopback";
    std::vector<Endpoint> ends(static_cast<std::size_t>(n));
    MPI_Allgather(&me, sizeof me, MPI_BYTE, ends.data(), sizeof me, MPI_BYTE, leaders);
    const int next = (my_host + 1) % n;
    const int prev = (my_host + n - 1) % n;
    const double deadline = steady_seconds() + 20;
    if (failure.empty()) {
      Peer p;
      p.host = next;
      p.fd = connect_any(ends[static_cast<std::size_t>(next)], 3);
      const Hello hello{hello_magic, static_cast<std::uint32_t>(my_host), key};
      if (p.fd < 0 || !send_all(p.fd, &hello, sizeof hello, deadline)) {
        failure = "cannot connect to " + describe(next);
        if (p.fd >= 0) ::close(p.fd);
      } else {
        peers_.push_back(p);
      }
    }
    // The previous host connects to this one; anything else (a stray
    // connection) is closed.
    while (failure.empty()) {
      if (!wait_for(listener, POLLIN, deadline)) {
        failure = "no connection from " + describe(prev) + " within 20 s";
        break;
      }
      const int fd = ::accept4(listener, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0) continue;
      Hello hello{};
      if (recv_all(fd, &hello, sizeof hello, std::min(deadline, steady_seconds() + 3)) &&
          hello.magic == hello_magic && hello.key == key &&
          hello.host == static_cast<std::uint32_t>(prev)) {
        Peer p;
        p.fd = fd;
        p.host = prev;
        peers_.push_back(p);
        break;
      }
      ::close(fd);
    }
    if (listener >= 0) ::close(listener);
    MPI_Comm_free(&leaders);
  }
  // Every rank learns whether the ring is whole: watched by all, or by none.
  const int ok = failure.empty() ? 1 : 0;
  int all_ok = ok;
  transport::host_allreduce(&all_ok, 1, MPI_MIN, comm);
  if (all_ok == 0) {
    const int me = failure.empty() ? 1 << 30 : rank_;
    int lowest = me;
    transport::host_allreduce(&lowest, 1, MPI_MIN, comm);
    if (rank_ == lowest) {
      std::fprintf(stderr,
                   "kpmap: rank %d: warning: the hosts are not watched for loss (%s); a lost "
                   "host is found by the launcher and the watchdog only\n",
                   rank_, failure.c_str());
    }
    for (const auto& p : peers_) ::close(p.fd);
    peers_.clear();
    return;
  }
  watching_ = true;
  if (!leader) return;
  const double t = steady_seconds();
  for (auto& p : peers_) p.heard = t;
  g_monitor.store(this, std::memory_order_release);
  detail::at_abort(host_monitor_farewell);
  if (signals_ != nullptr) StopSignals::on_end(host_monitor_on_launcher_end);
  thread_ = std::thread([this] { watch(); });
}

HostMonitor::~HostMonitor() {
  HostMonitor* self = this;
  g_monitor.compare_exchange_strong(self, nullptr);
  if (thread_.joinable()) {
    stop_.store(true);
    thread_.join();
  }
  if (signals_ != nullptr) StopSignals::on_end(nullptr);
  g_ready.shown.store(-1);
  for (const auto& p : peers_) {
    send_byte(p.fd, bye_byte);
    ::close(p.fd);
  }
}

std::string HostMonitor::describe(int host) const {
  const auto h = static_cast<std::size_t>(host);
  const auto& ranks = host_ranks_[h];
  return "host " + host_names_[h] + " (rank" + (ranks.size() > 1 ? "s " : " ") +
         detail::rank_list(ranks) + ")";
}

void HostMonitor::watch() {
  double last_beat = 0;
  std::vector<pollfd> fds(peers_.size());
  while (!stop_.load(std::memory_order_relaxed)) {
    for (std::size_t i = 0; i < peers_.size(); ++i) {
      fds[i] = pollfd{peers_[i].done ? -1 : peers_[i].fd, POLLIN, 0};
    }
    ::poll(fds.data(), fds.size(), 200);
    const double t = steady_seconds();
    if (t - last_beat >= 1.0) {
      for (const auto& p : peers_) {
        if (!p.done) send_byte(p.fd, beat_byte);
      }
      last_beat = t;
    }
    const Peer* most_silent = nullptr;
    for (std::size_t i = 0; i < peers_.size(); ++i) {
      Peer& p = peers_[i];
      if (p.done) continue;
      if (fds[i].revents != 0) {
        char buf[64];
        const ssize_t k = ::recv(p.fd, buf, sizeof buf, MSG_DONTWAIT);
        if (k > 0) {
          p.heard = t;
          if (std::find(buf, buf + k, bye_byte) != buf + k ||
              std::find(buf, buf + k, abort_byte) != buf + k) {
            p.done = true;
            continue;
          }
          if (std::find(buf, buf + k, ending_byte) != buf + k) p.ending = true;
        } else if (k == 0 || (errno != EAGAIN && errno != EINTR)) {
          // Its launcher ended it (for a rank that failed and said so, or that
          // the launcher names): nothing to add, and this rank's own end follows.
          if (p.ending) {
            p.done = true;
            continue;
          }
          lost(p, true, 0);
        }
      }
      const double silent = t - p.heard;
      if (silent > timeout_) lost(p, false, silent);
      if (silent > silent_on_stop && (most_silent == nullptr || p.heard < most_silent->heard)) {
        most_silent = &p;
      }
      // The launcher ends this rank (SIGTERM) while a host is silent: it has
      // found the lost host itself, and kills this rank a moment later. A
      // user's stop (SIGUSR1, SIGINT) during a short silence is no such end:
      // the stop waits for the host like any collective.
      if (silent > silent_on_stop && signals_ != nullptr && signals_->ending()) {
        lost(p, false, silent);
      }
    }
    if (most_silent == nullptr) {
      g_ready.shown.store(-1, std::memory_order_release);
    } else if (signals_ != nullptr) {
      const std::string line = lost_line(*most_silent, false, t - most_silent->heard);
      const int fill = g_ready.shown.load(std::memory_order_relaxed) == 0 ? 1 : 0;
      const std::size_t n = std::min(line.size(), sizeof g_ready.text[fill]);
      std::memcpy(g_ready.text[fill], line.data(), n);
      g_ready.length[fill] = n;
      g_ready.shown.store(fill, std::memory_order_release);
    }
  }
}

std::string HostMonitor::lost_line(const Peer& p, bool closed, double silent) {
  std::string line = "kpmap: rank " + std::to_string(rank_) + ": ";
  const std::string step = std::to_string(record_.step());
  if (closed) {
    // The host's kernel closed the connection: the host is up, its rank is not.
    const auto& ranks = host_ranks_[static_cast<std::size_t>(p.host)];
    line += "rank " + std::to_string(ranks.front()) + " on " + describe(p.host) +
            " ended without a word in step " + step +
            ": its connection closed while its host still answers (the rank was killed or "
            "crashed)";
  } else {
    line += describe(p.host) + " stopped answering in step " + step + ": ";
    char text[128];
    std::snprintf(text, sizeof text, "no word from it for %.0f s (KPMAP_HOST_TIMEOUT=%g%s)", silent,
                  timeout_, silent <= timeout_ ? "; the launcher is ending the job too" : "");
    line += text;
  }
  line += "; ending the job";
  line += record_.note();
  return line + "\n";
}

void HostMonitor::lost(const Peer& p, bool closed, double silent) {
  // The abort hooks' farewell first: the other neighbour must not take this
  // process's end for a lost host. No stdio from this thread (the main
  // thread may hold its lock): the line goes out in one write().
  const std::string line = lost_line(p, closed, silent);
  detail::end_process(line.data(), line.size(), exit_code::failure);
}

}  // namespace kpmap
