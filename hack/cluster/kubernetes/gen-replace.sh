#!/usr/bin/env bash
# Pins k8s.io/kubernetes in this module's go.mod and (re)writes one `replace` per
# staging module that k8s.io/kubernetes's own go.mod requires at v0.0.0
# (k8s.io/foo => k8s.io/foo v0.MINOR.PATCH), then runs `go mod tidy`.
#
#   hack/cluster/kubernetes/gen-replace.sh            # keep the pinned version
#   hack/cluster/kubernetes/gen-replace.sh v1.37.2    # move to another version
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")"
export GOTOOLCHAIN=local GOWORK=off

version=${1:-$(awk '$1 == "require" && $2 == "k8s.io/kubernetes" { print $3 } $1 == "k8s.io/kubernetes" && $2 ~ /^v1\./ { print $2 }' go.mod | head -n1)}
if [[ ! $version =~ ^v1\.([0-9]+)\.([0-9]+)$ ]]; then
  echo "gen-replace.sh: expected a release version like v1.37.2, got '${version}'" >&2
  exit 1
fi
staging_version="v0.${BASH_REMATCH[1]}.${BASH_REMATCH[2]}"

upstream_gomod=$(go mod download -json "k8s.io/kubernetes@${version}" | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",$/\1/p')
if [[ ! -f $upstream_gomod ]]; then
  echo "gen-replace.sh: could not download the go.mod of k8s.io/kubernetes@${version}" >&2
  exit 1
fi

# Staging modules: required by k8s.io/kubernetes at the placeholder version v0.0.0.
mapfile -t staging < <(go mod edit -json "$upstream_gomod" |
  python3 -c 'import json, sys
for r in json.load(sys.stdin).get("Require") or []:
    if r["Version"] == "v0.0.0":
        print(r["Path"])')
if ((${#staging[@]} == 0)); then
  echo "gen-replace.sh: found no v0.0.0 requirements in ${upstream_gomod}" >&2
  exit 1
fi

# Drop every existing k8s.io replace, then add the fresh set.
edits=()
while read -r old; do
  edits+=("-dropreplace=${old}")
done < <(go mod edit -json | python3 -c 'import json, sys
for r in json.load(sys.stdin).get("Replace") or []:
    print(r["Old"]["Path"])')
for module in "${staging[@]}"; do
  edits+=("-replace=${module}=${module}@${staging_version}")
done
go mod edit "-require=k8s.io/kubernetes@${version}" "${edits[@]}"

echo "gen-replace.sh: k8s.io/kubernetes ${version}, ${#staging[@]} staging modules at ${staging_version}" >&2
go mod tidy
