#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The installed kpmap-plot draws whatever python3 comes first on the PATH.
#
#   check_plot_python.sh BUILD_DIR SOURCE_DIR RUN_DIR WORK_DIR
#
# Installs BUILD_DIR into WORK_DIR/prefix and puts first on the PATH a python3
# without matplotlib, numpy or h5py (the system's, with -S: no site packages,
# as a pyenv, conda or module Python lacks Debian's). Then, on the run folder
# RUN_DIR (a kpmap-train run's, copied):
#  1. the installed kpmap-plot's first line names a Python that imports them;
#  2. the installed kpmap-plot draws loss.png;
#  3. so does it, started by that python3 explicitly, and the source tree's
#     kpmap-plot (#!/usr/bin/env python3): they run themselves again under a
#     Python that has the libraries;
#  4. where no Python has them (the search already done), it says how to
#     install them, and exits 0.
set -euo pipefail
build=$1 source=$2 run=$3 work=$4
fail() { echo "FAIL: $*"; exit 1; }
rm -rf "$work" && mkdir -p "$work/bin"
cmake --install "$build" --prefix "$work/prefix" >/dev/null
plot=$work/prefix/bin/kpmap-plot
[[ -x $plot ]] || fail "the install has no bin/kpmap-plot"

real=$(command -v /usr/bin/python3 || command -v python3)
cat >"$work/bin/python3" <<EOT
#!/bin/sh
exec $real -S "\$@"
EOT
chmod +x "$work/bin/python3"
export PATH=$work/bin:$PATH
if python3 -c "import matplotlib" 2>/dev/null; then fail "the bare python3 imports matplotlib"; fi

first=$(head -1 "$plot")
[[ $first == "#!/"* ]] || fail "$plot's first line is '$first'"
"${first#\#!}" -c "import matplotlib, numpy, h5py" || fail "$plot's Python (${first#\#!}) lacks the libraries"

draw() {  # draw NAME COMMAND...: the command draws DIR/loss.png anew
  local dir=$work/$1; shift
  rm -rf "$dir" && cp -r "$run" "$dir" && rm -f "$dir/loss.png"
  local out
  out=$("$@" "$dir" 2>&1) || fail "$*: exit $? ($out)"
  [[ $out == *"kpmap: plot written to $dir/loss.png"* && -s $dir/loss.png ]] ||
    fail "$*: no loss.png ($out)"
  echo "ok: $* draws loss.png"
}
draw installed "$plot"
draw installed_by_bare_python python3 "$plot"
draw source_tree "$source/scripts/kpmap-plot"

dir=$work/none && rm -rf "$dir" && cp -r "$run" "$dir" && rm -f "$dir/loss.png"
out=$(KPMAP_PYTHON_SEARCHED=none python3 "$plot" "$dir" 2>&1) || fail "no Python: exit $? ($out)"
[[ $out == *"kpmap: no plots (matplotlib, numpy or h5py is not installed for"*"nor for any python3 on the PATH; install them"* ]] ||
  fail "no Python: '$out'"
[[ ! -e $dir/loss.png ]] || fail "no Python: a loss.png was drawn"
echo "ok: without a Python that has them: $out"
