// SPDX-License-Identifier: BSD-3-Clause
#pragma once
/// \file
/// \brief Plain files the way kpmap writes and reads them: written whole or
/// not at all (a temporary beside the target, renamed over it; on failure
/// the temporary is removed and the old file stays), with the reason a write
/// failed said the way a user can act on (a full disk, with the bytes left).

#include <cstdint>
#include <string>

namespace kpmap::files {

/// \brief Writes `text` to `path` atomically: to `path.tmp`, then renamed
/// over `path`. Not collective: call it on the rank that owns the file.
/// \throws kpmap::Error (this rank) naming the file and why, after removing
/// the temporary; any previous `path` is untouched. It never replaces what
/// is not a regular file (see not_replaceable()).
void write_atomic(const std::string& path, const std::string& text);

/// \brief Bytes free to an unprivileged writer on the file system holding
/// `path` (a file or folder; its folder when it does not exist yet), or
/// UINT64_MAX when that cannot be told.
std::uint64_t free_bytes(const std::string& path);

/// \brief Why a write to `path` failed, from errno `err` and the room left:
/// "no space left on the device (N bytes are free)", or strerror's text.
std::string write_failure_reason(const std::string& path, int err);

/// \brief What keeps `path` from being read as an input file: "" for a
/// regular file (or a link to one); else "does not exist", "is a directory",
/// "is a FIFO (named pipe)", "is a character device" (/dev/zero), ... , said
/// so that "<what> <path> " can stand before it. Reading a FIFO blocks and
/// reading a device never ends, so inputs are checked with this first.
std::string not_a_regular_file(const std::string& path);

/// \brief What keeps kpmap from replacing `path` with a file it writes: ""
/// when nothing is there or a regular file is; else "is a symbolic link",
/// "is a directory", "is a FIFO (named pipe)", "is a character device", ...
/// A rename over a device or a FIFO would put a regular file in its place
/// (run as root, over /dev/null), and one over a link would replace the link.
std::string not_replaceable(const std::string& path);

/// \brief What keeps kpmap from writing into `path` in place (a lock file):
/// not_replaceable()'s reasons, and "has N names (hard links)" for a regular
/// file that is also a file elsewhere, which writing it would change.
std::string not_ours(const std::string& path);

/// \brief What tells one copy of an input file from another, for the ranks
/// of a job to agree that they read the same: "N bytes, digest D" (D over its
/// first and last MiB, where a checkpoint keeps its step and its first
/// blocks), or why it cannot be read (not_a_regular_file()'s words, or
/// strerror's). Reads at most 2 MiB. Not collective.
std::string identity(const std::string& path);

/// \brief Makes `path.tmp` ready to be created: removes a regular file left
/// there by a killed run. \throws kpmap::Error (this rank) when it is
/// anything else (a FIFO would block the open, a link would be followed).
void clear_temporary(const std::string& tmp);

}  // namespace kpmap::files
