#!/usr/bin/env bash
# The disk space an install script's packages add to a fresh Debian 12. apt simulates, against
# an empty package database, installing the base system (every package of Priority required
# or important, as debootstrap does, without Recommends), then the base system plus the
# script's packages; the Installed-Size of the packages only the second one installs is summed.
#   scripts/install_size.sh [--with-recommends] SCRIPT [SCRIPT...]   e.g. scripts/install_deps.sh
# --with-recommends measures the script's packages as `apt-get install` without
# --no-install-recommends installs them.
set -euo pipefail
recommends=--no-install-recommends
if [[ ${1:-} == --with-recommends ]]; then recommends=--install-recommends; shift; fi
empty=$(mktemp)
trap 'rm -f "$empty"' EXIT
mapfile -t base < <(apt-cache dumpavail | awk '/^Package:/{p = $2} /^Priority: (required|important)$/{print p}' | sort -u)
pkgs=()
for script in "$@"; do mapfile -t -O "${#pkgs[@]}" pkgs < <("$script" --print); done
simulate() { apt-get -s -o Dir::State::status="$empty" install "$@" | awk '/^Inst /{print $2}' | sort; }
added=$(comm -13 <(simulate --no-install-recommends "${base[@]}") <(simulate "$recommends" "${base[@]}" "${pkgs[@]}"))
# Installed-Size is in KiB.
kib=$(apt-cache show --no-all-versions $added | awk '/^Installed-Size:/{s += $2} END {print s}')
printf '%s: %d packages named, %d installed, %d MiB\n' "$*" "${#pkgs[@]}" "$(wc -w <<< "$added")" $((kib / 1024))
