#!/usr/bin/env bash
# Installs what a fresh machine lacks to build nkc: the autotools that isl-rs needs to build ISL
# from source (autoconf, automake, libtool). Idempotent, and quick when everything is present.
set -euo pipefail

missing=()
command -v autoconf >/dev/null 2>&1 || missing+=(autoconf)
command -v automake >/dev/null 2>&1 || missing+=(automake)
command -v libtoolize >/dev/null 2>&1 || missing+=(libtool)
command -v make >/dev/null 2>&1 || missing+=(make)

if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

echo "setup: installing ${missing[*]}" >&2
sudo=""
if [ "$(id -u)" -ne 0 ]; then
  sudo="sudo"
fi
export DEBIAN_FRONTEND=noninteractive
# Try without refreshing the package lists first; refresh only when that fails.
if ! $sudo apt-get install -y --no-install-recommends "${missing[@]}" >/dev/null 2>&1; then
  $sudo apt-get update -qq >/dev/null
  $sudo apt-get install -y --no-install-recommends "${missing[@]}" >/dev/null
fi
