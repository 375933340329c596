// SPDX-License-Identifier: BSD-3-Clause
#include <kpmap/base/error.hpp>
#include <kpmap/base/files.hpp>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <vector>

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

namespace kpmap::files {

namespace fs = std::filesystem;

std::uint64_t free_bytes(const std::string& path) {
  std::error_code ec;
  fs::path dir = path.empty() ? fs::path(".") : fs::path(path);
  if (!fs::is_directory(dir, ec)) dir = dir.parent_path().empty() ? "." : dir.parent_path();
  struct statvfs st {};
  if (::statvfs(dir.c_str(), &st) != 0) return UINT64_MAX;
  return std::uint64_t(st.f_bavail) * std::uint64_t(st.f_frsize);
}

std::string write_failure_reason(const std::string& path, int err) {
  const std::uint64_t left = free_bytes(path);
  if (err == ENOSPC || err == EDQUOT || left < 4096) {
    return "no space left on the device (" +
           (left == UINT64_MAX ? std::string("free space unknown")
                               : std::to_string(left) + " bytes are free") +
           ")";
  }
  // A file size limit (ulimit -f): EFBIG, or an error HDF5 reported without errno.
  rlimit fsize{};
  if ((err == EFBIG || err == 0) && getrlimit(RLIMIT_FSIZE, &fsize) == 0 &&
      fsize.rlim_cur != RLIM_INFINITY) {
    return std::string(err == EFBIG ? "the file would pass" : "perhaps it reached") +
           " this process's file size limit (ulimit -f: " + std::to_string(fsize.rlim_cur) +
           " bytes)";
  }
  return err != 0 ? std::strerror(err) : "an I/O error";
}

namespace {
const char* kind_of(mode_t mode) {
  return S_ISLNK(mode)    ? "is a symbolic link"
         : S_ISDIR(mode)  ? "is a directory"
         : S_ISFIFO(mode) ? "is a FIFO (named pipe)"
         : S_ISCHR(mode)  ? "is a character device"
         : S_ISBLK(mode)  ? "is a block device"
         : S_ISSOCK(mode) ? "is a socket"
                          : "is not a file";
}
}  // namespace

std::string not_replaceable(const std::string& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) {
    const int e = errno;
    if (e == ENOENT) return "";
    return std::string("cannot be examined: ") + std::strerror(e);
  }
  return S_ISREG(st.st_mode) ? "" : kind_of(st.st_mode);
}

std::string not_ours(const std::string& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) return not_replaceable(path);
  if (!S_ISREG(st.st_mode)) return kind_of(st.st_mode);
  if (st.st_nlink > 1) {
    return "has " + std::to_string(st.st_nlink) +
           " names (hard links): it is also a file elsewhere, which writing it would change";
  }
  return "";
}

void clear_temporary(const std::string& tmp) {
  if (const std::string why = not_replaceable(tmp); !why.empty()) {
    throw Error("will not write '" + tmp + "': it " + why +
                ", and kpmap writes only regular files");
  }
  std::remove(tmp.c_str());
}

void write_atomic(const std::string& path, const std::string& text) {
  if (const std::string why = not_replaceable(path); !why.empty()) {
    throw Error("will not write '" + path + "': it " + why +
                ", and kpmap replaces only regular files");
  }
  const std::string tmp = path + ".tmp";
  clear_temporary(tmp);
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0) {
    throw Error("cannot write '" + tmp + "': " + write_failure_reason(tmp, errno));
  }
  std::size_t done = 0;
  int err = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      err = n < 0 ? errno : EIO;
      break;
    }
    done += std::size_t(n);
  }
  if (err == 0 && ::fsync(fd) != 0) err = errno;
  if (::close(fd) != 0 && err == 0) err = errno;
  if (err == 0 && std::rename(tmp.c_str(), path.c_str()) != 0) {
    const int e = errno;
    std::remove(tmp.c_str());
    throw Error("cannot rename '" + tmp + "' to '" + path + "': " + std::strerror(e));
  }
  if (err != 0) {
    const std::string reason = write_failure_reason(tmp, err);
    std::remove(tmp.c_str());
    throw Error("cannot write '" + tmp + "': " + reason);
  }
}

std::string not_a_regular_file(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    const int e = errno;
    if (e == ENOENT || e == ENOTDIR) return "does not exist";
    return std::string("cannot be examined: ") + std::strerror(e);
  }
  if (S_ISREG(st.st_mode)) return "";
  return std::string(kind_of(st.st_mode)) + ", not a regular file";
}

std::string identity(const std::string& path) {
  if (std::string why = not_a_regular_file(path); !why.empty()) return why;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  struct stat st {};
  if (fd < 0 || ::fstat(fd, &st) != 0) {
    const int e = errno;
    if (fd >= 0) ::close(fd);
    return std::string("cannot be read: ") + std::strerror(e);
  }
  constexpr off_t part = off_t(1) << 20;
  std::uint64_t h = 14695981039346656037ull;  // FNV-1a
  std::vector<unsigned char> buffer(static_cast<std::size_t>(part));
  std::string failure;
  for (const off_t at : {off_t(0), st.st_size > 2 * part ? st.st_size - part : part}) {
    if (at >= st.st_size) break;
    const ssize_t n = ::pread(fd, buffer.data(), buffer.size(), at);
    if (n < 0) {
      failure = std::string("cannot be read: ") + std::strerror(errno);
      break;
    }
    for (ssize_t i = 0; i < n; ++i) {
      h ^= buffer[static_cast<std::size_t>(i)];
      h *= 1099511628211ull;
    }
  }
  ::close(fd);
  if (!failure.empty()) return failure;
  char digest[17];
  std::snprintf(digest, sizeof digest, "%016llx", static_cast<unsigned long long>(h));
  return std::to_string(st.st_size) + " bytes, digest " + digest;
}

}  // namespace kpmap::files
