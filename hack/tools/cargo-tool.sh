#!/usr/bin/env bash
# cargo-tool.sh NAME VERSION: makes bin/NAME a crates.io tool at VERSION. Built once per machine
# into a per-user cache keyed by name and version, so fresh clones (CI) link instead of rebuilding.
set -euo pipefail
name=$1 version=$2
root=$(cd "$(dirname "$0")/../.." && pwd)
cache=${XDG_CACHE_HOME:-$HOME/.cache}/redis-operator/${name}-${version}
if [[ ! -x ${cache}/bin/${name} ]]; then
  echo ">> building ${name} ${version} from crates.io (once per machine; takes a few minutes)"
  cargo install "${name}" --version "${version}" --locked --root "${cache}.partial" --quiet
  rm -rf "${cache}" && mv "${cache}.partial" "${cache}"
fi
mkdir -p "${root}/bin"
ln -sf "${cache}/bin/${name}" "${root}/bin/${name}"
