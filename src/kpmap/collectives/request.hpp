// SPDX-License-Identifier: BSD-3-Clause
#pragma once
/// \file
/// \brief Handles for non-blocking collectives.

#include <kpmap/transport/mpi_ops.hpp>

#include <functional>
#include <memory>
#include <utility>

namespace kpmap {

/// \brief A non-blocking collective in flight. It owns every buffer the
/// operation uses (packed copies, staging leases), so the caller may drop its
/// own handles; the result lands in the caller's View when wait() returns.
///
/// Destroying a Request that has not completed waits for it: MPI must never
/// be left writing into freed memory.
class Request {
 public:
  Request() = default;
  Request(transport::Pending pending, std::function<void()> finish)
      : pending_(std::move(pending)), finish_(std::move(finish)), done_(false) {}
  Request(Request&& other) noexcept { *this = std::move(other); }
  Request& operator=(Request&& other) noexcept {
    if (this != &other) {
      complete_quietly();
      pending_ = std::move(other.pending_);
      finish_ = std::move(other.finish_);
      done_ = other.done_;
      other.done_ = true;
      other.pending_.clear();
      other.finish_ = nullptr;
    }
    return *this;
  }
  Request(const Request&) = delete;
  Request& operator=(const Request&) = delete;
  ~Request() { complete_quietly(); }

  /// \brief Blocks until the operation completes and its result is in place.
  void wait() {
    if (done_) return;
    transport::wait_all(pending_);
    finish();
  }

  /// \brief Completes the operation if MPI has finished it; true when done.
  bool test() {
    if (done_) return true;
    if (!transport::test_all(pending_)) return false;
    finish();
    return true;
  }

  bool done() const noexcept { return done_; }

 private:
  void finish() {
    done_ = true;
    if (finish_) {
      auto f = std::move(finish_);
      finish_ = nullptr;
      f();
    }
  }
  void complete_quietly() noexcept {
    try {
      wait();
    } catch (...) {
      // A failing MPI wait in a destructor cannot be reported; the job is
      // already broken and MPI's error handler will end it.
    }
  }

  transport::Pending pending_;
  std::function<void()> finish_;
  bool done_ = true;
};

/// \brief A non-blocking collective that produces a new value (all_gather, ...).
template <class T>
class Async {
 public:
  Async(T value, Request request) : value_(std::move(value)), request_(std::move(request)) {}
  /// \brief Waits and returns the result.
  T& wait() {
    request_.wait();
    return value_;
  }
  bool test() { return request_.test(); }

 private:
  T value_;
  Request request_;
};

namespace detail {
/// \brief Wraps a move-only completion step into a Request.
template <class Finish>
Request make_request(transport::Pending pending, Finish&& finish) {
  auto holder = std::make_shared<std::decay_t<Finish>>(std::forward<Finish>(finish));
  return Request(std::move(pending), [holder] { (*holder)(); });
}
}  // namespace detail

}  // namespace kpmap
