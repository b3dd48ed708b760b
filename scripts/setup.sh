#!/usr/bin/env bash
# Installs what a fresh machine lacks to build and test nkc: the autotools that isl-rs needs to
# build ISL from source (autoconf, automake, libtool), and the CPython judge of the tests
# (python3 with numpy: tests/python_judge.rs and tests/numerics_agree.rs fail without them).
# Idempotent, and quick when everything is present. Works as root (no sudo needed) or with sudo.
set -euo pipefail

sudo=""
if [ "$(id -u)" -ne 0 ]; then
  sudo="sudo"
fi
export DEBIAN_FRONTEND=noninteractive

# apt-get install, refreshing the package lists only when the first try fails.
apt_install() {
  echo "setup: installing $*" >&2
  if ! $sudo apt-get install -y --no-install-recommends "$@" >/dev/null 2>&1; then
    $sudo apt-get update -qq >/dev/null
    $sudo apt-get install -y --no-install-recommends "$@" >/dev/null
  fi
}

missing=()
command -v autoconf >/dev/null 2>&1 || missing+=(autoconf)
command -v automake >/dev/null 2>&1 || missing+=(automake)
command -v libtoolize >/dev/null 2>&1 || missing+=(libtool)
command -v make >/dev/null 2>&1 || missing+=(make)
command -v python3 >/dev/null 2>&1 || missing+=(python3)
if [ ${#missing[@]} -ne 0 ]; then
  apt_install "${missing[@]}"
fi

# numpy: the distribution's package when apt has it, else pip for this user (a python3 that apt
# does not manage, such as pyenv's, imports only what its own pip installed).
if ! python3 -c 'import numpy' >/dev/null 2>&1; then
  if command -v apt-get >/dev/null 2>&1 && [ "$(command -v python3)" = /usr/bin/python3 ]; then
    apt_install python3-numpy
  fi
  if ! python3 -c 'import numpy' >/dev/null 2>&1; then
    echo "setup: installing numpy with pip" >&2
    python3 -m pip install --user --quiet numpy 2>/dev/null ||
      python3 -m pip install --user --quiet --break-system-packages numpy
  fi
  python3 -c 'import numpy' || {
    echo "setup: numpy is still missing; install it for $(command -v python3)" >&2
    exit 1
  }
fi
