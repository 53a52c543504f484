#!/usr/bin/env bash
# Builds hack/bench/controller-runtime-webhook (redis-webhook's admission rules on Go's
# controller-runtime, the third target of `make bench-webhook`) into bin/controller-runtime-webhook.
#
# As hack/cluster/build.sh: the binary is kept in ${XDG_CACHE_HOME:-$HOME/.cache}/redis-operator/,
# keyed by the controller-runtime version and a hash of go.mod, go.sum, the sources, the Go
# version and the build flags, built by one process at a time (flock), and bin/ only links to it,
# so a second run or another clone on the same machine builds nothing. GOCACHE and GOMODCACHE
# are Go's defaults, shared with the test bed's builds.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "${here}/../.." && pwd)
dir="${here}/controller-runtime-webhook"
bin_dir=${BIN_DIR:-${root}/bin}
cache_dir=${REDIS_OPERATOR_CACHE:-${XDG_CACHE_HOME:-${HOME}/.cache}/redis-operator}
name=controller-runtime-webhook

GO=${GO:-$(command -v go || true)}
if [[ -z $GO && -x /usr/local/go/bin/go ]]; then
  GO=/usr/local/go/bin/go
fi
[[ -n $GO ]] || { echo "${name}.sh: no Go toolchain found (put 'go' on PATH or set GO=/path/to/go)" >&2; exit 1; }

# go.mod is the source of truth: no go.work, no toolchain switch, no module graph edits.
export GOTOOLCHAIN=local GOWORK=off CGO_ENABLED=0 GOFLAGS=-mod=readonly
ldflags="-s -w"
log() { printf '[bench] %s\n' "$*" >&2; }

# The redis.conf directives are generated from the Rust table: a stale copy would judge
# spec.config by another table.
python3 "${dir}/gen-directives.py" --check

version=$(awk '($1 == "sigs.k8s.io/controller-runtime") { print $2; exit }' "${dir}/go.mod")
[[ -n $version ]] || { log "no sigs.k8s.io/controller-runtime version in ${dir}/go.mod"; exit 1; }
key=$({
  "$GO" version
  "$GO" env GOOS GOARCH
  echo "ldflags=${ldflags}" CGO_ENABLED="${CGO_ENABLED}" trimpath
  (cd "$dir" && cat go.mod go.sum && find . -name '*.go' -print0 | sort -z | xargs -0r cat)
} | sha256sum | cut -c1-16)
entry="${cache_dir}/bench-cr-webhook-${version}-${key}"

mkdir -p "$cache_dir" "$bin_dir"
exec {lock_fd}>"${entry}.lock"
flock "$lock_fd"
if [[ ! -x ${entry}/${name} ]]; then
  log "building ${name} (controller-runtime ${version}); a cold build takes a few minutes on 2 cores"
  tmp=$(mktemp -d "${entry}.tmp.XXXXXX")
  start=$SECONDS
  if ! (cd "$dir" && "$GO" build -trimpath -ldflags "$ldflags" -o "${tmp}/${name}" .) >"${tmp}/build.log" 2>&1; then
    log "building ${name} failed; last lines of its log:"
    tail -n 40 "${tmp}/build.log" >&2
    rm -rf "$tmp"
    exit 1
  fi
  mv "${tmp}/build.log" "${tmp}/.build.log"
  chmod 755 "$tmp"
  rm -rf "$entry"
  mv "$tmp" "$entry"
  log "built ${name} in $(((SECONDS - start) / 60))m$(((SECONDS - start) % 60))s"
fi
dst="${bin_dir}/${name}"
if [[ ! ( -e $dst && ${entry}/${name} -ef $dst ) ]]; then
  ln -f "${entry}/${name}" "$dst" 2>/dev/null || { cp -f "${entry}/${name}" "${dst}.tmp.$$" && mv -f "${dst}.tmp.$$" "$dst"; }
fi
flock -u "$lock_fd"
echo "$dst"
