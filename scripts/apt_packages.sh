# Shared by install_deps.sh and install_bench_deps.sh: installs the Debian packages named in
# the PKGS array that are missing, without their "Recommends" (nothing strata runs needs
# them), with sudo when not root. `--print` lists PKGS and installs nothing (for
# scripts/install_size.sh). Safe to re-run.
apt_packages() {
  if [[ ${1:-} == --print ]]; then
    printf '%s\n' "${PKGS[@]}"
    return
  fi
  local sudo="" missing=() p
  if [[ $(id -u) -ne 0 ]]; then sudo="sudo"; fi
  for p in "${PKGS[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if ((${#missing[@]})); then
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
  fi
  echo "$(basename "$0"): all ${#PKGS[@]} packages present"
}
