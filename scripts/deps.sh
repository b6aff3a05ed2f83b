#!/usr/bin/env bash
# Installs the Debian packages dtplan needs, only those missing.
set -euo pipefail
packages=(cmake g++ make libboost-dev librange-v3-dev libfmt-dev catch2 nlohmann-json3-dev python3-jsonschema graphviz libopenmpi-dev openmpi-bin clang libclang-rt-dev)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "installing: ${missing[*]}"
  sudo=""
  [ "$(id -u)" = 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
