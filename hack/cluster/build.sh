#!/usr/bin/env bash
# Builds the test bed's binaries from Go modules into <repo>/bin/:
#   kube-apiserver kube-controller-manager kube-scheduler kubectl  (hack/cluster/kubernetes)
#   etcd                                                           (hack/cluster/etcd)
#   kwok                                                           (hack/cluster/kwok)
#   helm                                                           (hack/cluster/helm)
#   kubelet kube-proxy (the real node)                             (hack/cluster/kubernetes)
#   pause oci-image (the real node's sandbox process, image packer) (hack/cluster/images)
#   bed-provisioner (the real node's volumes, local directories)   (hack/cluster/provisioner)
#   bed-firewall (NetworkPolicy enforcement: kube-router's firewall) (hack/cluster/kube-router)
#   bed-cert-manager (cert-manager's Certificate, CA and selfSigned issuer controllers) and
#   cert-manager-crds/ (YAML, not built: its CRDs, which up.sh applies) (hack/cluster/cert-manager)
#   versitygw (the S3-compatible object store for backups; tool name s3) (hack/cluster/s3)
#
# Every build is kept in ${XDG_CACHE_HOME:-$HOME/.cache}/redis-operator/, keyed by
# tool, version and a hash of the module's go.mod/go.sum/sources, the Go version and
# the build flags. bin/ only links (or copies) from there, so a second run, or a
# fresh clone of the repository elsewhere on the same machine, builds nothing.
#
#   hack/cluster/build.sh                # all tools
#   hack/cluster/build.sh etcd kwok      # some of them
#   hack/cluster/build.sh cert-manager   # bed-cert-manager and cert-manager's CRDs
#   hack/cluster/build.sh s3             # versitygw
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "${here}/../.." && pwd)
bin_dir=${BIN_DIR:-${root}/bin}
cache_dir=${REDIS_OPERATOR_CACHE:-${XDG_CACHE_HOME:-${HOME}/.cache}/redis-operator}

GO=${GO:-$(command -v go || true)}
if [[ -z $GO && -x /usr/local/go/bin/go ]]; then
  GO=/usr/local/go/bin/go
fi
if [[ -z $GO ]]; then
  echo "build.sh: no Go toolchain found (put 'go' on PATH or set GO=/path/to/go)" >&2
  exit 1
fi

# The go.mod files are the source of truth; never let a go.work or an automatic
# toolchain switch change what gets built.
export GOTOOLCHAIN=local GOWORK=off CGO_ENABLED=0 GOFLAGS=-mod=readonly

log() { printf '[tools] %s\n' "$*" >&2; }

# version_of DIR MODULE: the version DIR/go.mod requires MODULE at.
version_of() {
  awk -v m="$2" '($1 == "require" && $2 == m) { print $3; exit } ($1 == m && $2 ~ /^v/) { print $2; exit }' "$1/go.mod"
}

# module_time MODULE VERSION: the module version's own timestamp (from the Go module proxy's info),
# so a stamped build date, and with it the cache key, is reproducible.
module_time() {
  local info time=""
  info=$("$GO" mod download -json "$1@$2" | sed -n 's/^[[:space:]]*"Info": "\(.*\)",*$/\1/p')
  [[ ! -f $info ]] || time=$(sed -n 's/.*"Time":"\([^"]*\)".*/\1/p' "$info")
  echo "${time:-1970-01-01T00:00:00Z}"
}

# Build settings of each tool: module dir, packages, binaries, ldflags.
tool_settings() {
  local tool=$1
  dir="${here}/${tool}"
  tags=""
  case $tool in
    kubernetes)
      version=$(version_of "$dir" k8s.io/kubernetes)
      [[ $version =~ ^v([0-9]+)\.([0-9]+)\. ]] || { log "bad k8s.io/kubernetes version '${version}'"; exit 1; }
      local major=${BASH_REMATCH[1]} minor=${BASH_REMATCH[2]}
      # The release's own timestamp, so the build (and its cache key) is reproducible.
      local build_date
      build_date=$(module_time k8s.io/kubernetes "$version")
      tags=selinux,notest,grpcnotrace
      packages=(k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager
        k8s.io/kubernetes/cmd/kube-scheduler k8s.io/kubernetes/cmd/kubectl
        k8s.io/kubernetes/cmd/kubelet k8s.io/kubernetes/cmd/kube-proxy)
      binaries=(kube-apiserver kube-controller-manager kube-scheduler kubectl kubelet kube-proxy)
      ldflags="-s -w"
      local pkg
      for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
        ldflags+=" -X ${pkg}.gitVersion=${version} -X ${pkg}.gitMajor=${major} -X ${pkg}.gitMinor=${minor}"
        ldflags+=" -X ${pkg}.gitTreeState=clean -X ${pkg}.buildDate=${build_date}"
      done
      ;;
    etcd)
      version=$(version_of "$dir" go.etcd.io/etcd/server/v3)
      packages=(.)
      binaries=(etcd)
      ldflags="-s -w -X go.etcd.io/etcd/api/v3/version.GitSHA=${version}"
      ;;
    kwok)
      version=$(version_of "$dir" sigs.k8s.io/kwok)
      packages=(sigs.k8s.io/kwok/cmd/kwok)
      binaries=(kwok)
      ldflags="-s -w -X sigs.k8s.io/kwok/pkg/consts.Version=${version#v}"
      ;;
    helm)
      version=$(version_of "$dir" helm.sh/helm/v3)
      local client_go
      client_go=$(cd "$dir" && "$GO" list -m -f '{{.Version}}' k8s.io/client-go)
      [[ $client_go =~ ^v0\.([0-9]+)\. ]] || { log "bad k8s.io/client-go version '${client_go}'"; exit 1; }
      local k8s_minor=${BASH_REMATCH[1]}
      packages=(helm.sh/helm/v3/cmd/helm)
      binaries=(helm)
      ldflags="-s -w -X helm.sh/helm/v3/internal/version.version=${version}"
      ldflags+=" -X helm.sh/helm/v3/internal/version.metadata= -X helm.sh/helm/v3/internal/version.gitTreeState=clean"
      ldflags+=" -X helm.sh/helm/v3/pkg/lint/rules.k8sVersionMajor=1 -X helm.sh/helm/v3/pkg/lint/rules.k8sVersionMinor=${k8s_minor}"
      ldflags+=" -X helm.sh/helm/v3/pkg/chartutil.k8sVersionMajor=1 -X helm.sh/helm/v3/pkg/chartutil.k8sVersionMinor=${k8s_minor}"
      ;;
    images)
      # The real node's image tools: the pod sandbox process and the image packer.
      version=$(version_of "$dir" github.com/google/go-containerregistry)
      packages=(./pause ./oci-image)
      binaries=(pause oci-image)
      ldflags="-s -w"
      ;;
    provisioner)
      # The real node's volume provisioner (local directories, sig-storage's provisioner library).
      version=$(version_of "$dir" sigs.k8s.io/sig-storage-lib-external-provisioner/v13)
      packages=(./bed-provisioner)
      binaries=(bed-provisioner)
      ldflags="-s -w"
      ;;
    kube-router)
      # NetworkPolicy enforcement on the real nodes (iptables and ipsets): kube-router's network
      # policy controller, for every real node at once (bed-firewall/main.go says why).
      version=$(version_of "$dir" github.com/cloudnativelabs/kube-router/v2)
      packages=(./bed-firewall)
      binaries=(bed-firewall)
      ldflags="-s -w"
      ;;
    cert-manager)
      # cert-manager's own controllers for Certificates (bed-cert-manager/main.go says why a
      # main of our own); the version stamp is what its user agent and Events carry.
      version=$(version_of "$dir" github.com/cert-manager/cert-manager)
      packages=(./bed-cert-manager)
      binaries=(bed-cert-manager)
      ldflags="-s -w -X github.com/cert-manager/cert-manager/pkg/util.AppVersion=${version}"
      ;;
    s3)
      # The S3-compatible object store of the backup/restore tests: versitygw, an S3 gateway, with
      # its posix backend (buckets are directories). Stamped as its Makefile does (`--version`).
      version=$(version_of "$dir" github.com/versity/versitygw)
      packages=(github.com/versity/versitygw/cmd/versitygw)
      binaries=(versitygw)
      ldflags="-s -w -X main.Version=${version} -X main.Build=${version}"
      ldflags+=" -X main.BuildTime=$(module_time github.com/versity/versitygw "$version")"
      ;;
    *)
      log "unknown tool '${tool}' (known: kubernetes etcd kwok helm images provisioner kube-router cert-manager s3)"
      exit 1
      ;;
  esac
  [[ -n $version ]] || { log "could not read the version of ${tool} from ${dir}/go.mod"; exit 1; }
}

# The cache key: everything that can change the binaries.
cache_key() {
  {
    "$GO" version
    "$GO" env GOOS GOARCH
    echo "tags=${tags}" "ldflags=${ldflags}" "packages=${packages[*]}" CGO_ENABLED="${CGO_ENABLED}" trimpath
    (cd "$dir" && cat go.mod go.sum && find . -name '*.go' -print0 | sort -z | xargs -0r cat)
  } | sha256sum | cut -c1-16
}

# link_into_bin SRC NAME: hard link SRC as bin/NAME (copy when across file systems).
link_into_bin() {
  local src=$1 dst="${bin_dir}/$2"
  if [[ -e $dst && $src -ef $dst ]]; then
    return
  fi
  ln -f "$src" "$dst" 2>/dev/null || { cp -f "$src" "${dst}.tmp.$$" && mv -f "${dst}.tmp.$$" "$dst"; }
}

build_tool() {
  local tool=$1 dir tags version ldflags
  local -a packages binaries
  tool_settings "$tool"
  local key entry
  key=$(cache_key)
  entry="${cache_dir}/${tool}-${version}-${key}"

  mkdir -p "$cache_dir" "$bin_dir"
  # One builder per cache entry, even across clones building at the same time.
  exec {lock_fd}>"${entry}.lock"
  flock "$lock_fd"

  local b missing=0
  for b in "${binaries[@]}"; do
    [[ -x "${entry}/${b}" ]] || missing=1
  done
  if ((missing)); then
    local note=""
    [[ $tool != kubernetes ]] || note="; a cold build takes 10-20 minutes on 2 cores"
    log "building ${tool} ${version} (${binaries[*]})${note}"
    local tmp start elapsed pid
    tmp=$(mktemp -d "${entry}.tmp.XXXXXX")
    start=$SECONDS
    (
      cd "$dir"
      exec "$GO" build -v -trimpath ${tags:+-tags "$tags"} -ldflags "$ldflags" -o "${tmp}/" "${packages[@]}"
    ) >"${tmp}/build.log" 2>&1 &
    pid=$!
    local next_report=$((start + 60))
    while kill -0 "$pid" 2>/dev/null; do
      sleep 2
      if ((SECONDS >= next_report)); then
        next_report=$((next_report + 60))
        elapsed=$((SECONDS - start))
        log "  ${tool}: $((elapsed / 60))m elapsed, $(grep -vc '^go: ' "${tmp}/build.log" || true) packages compiled so far"
      fi
    done
    if ! wait "$pid"; then
      log "building ${tool} failed; last lines of its log:"
      tail -n 40 "${tmp}/build.log" >&2
      rm -rf "$tmp"
      exit 1
    fi
    for b in "${binaries[@]}"; do
      [[ -x "${tmp}/${b}" ]] || { log "build of ${tool} produced no ${b}"; ls -la "$tmp" >&2; rm -rf "$tmp"; exit 1; }
    done
    mv "${tmp}/build.log" "${tmp}/.build.log"
    chmod 755 "$tmp"
    rm -rf "$entry"
    mv "$tmp" "$entry"
    log "built ${tool} ${version} in $(((SECONDS - start) / 60))m$(((SECONDS - start) % 60))s"
  else
    log "${tool} ${version}: cached (${entry})"
  fi
  for b in "${binaries[@]}"; do
    link_into_bin "${entry}/${b}" "$b"
    linked+=("$b")
  done
  flock -u "$lock_fd"
  exec {lock_fd}>&-
}

# cert-manager's CRDs: copied from its module (verified against go.sum) into bin/cert-manager-crds/,
# all six, as a cert-manager release installs them (bed-cert-manager serves no ACME: its Orders and
# Challenges are only there to be accepted). up.sh applies them.
fetch_cert_manager_crds() {
  local dir="${here}/cert-manager" version module_dir crd
  version=$(version_of "$dir" github.com/cert-manager/cert-manager)
  module_dir=$(cd "$dir" && "$GO" mod download -json github.com/cert-manager/cert-manager |
    sed -n 's/^[[:space:]]*"Dir": "\(.*\)",*$/\1/p')
  [[ -d ${module_dir}/deploy/crds ]] || { log "cert-manager ${version}: no deploy/crds in the module"; exit 1; }
  rm -rf "${bin_dir}/cert-manager-crds"
  mkdir -p "${bin_dir}/cert-manager-crds"
  for crd in cert-manager.io_{issuers,clusterissuers,certificates,certificaterequests} \
    acme.cert-manager.io_{orders,challenges}; do
    cp -f "${module_dir}/deploy/crds/${crd}.yaml" "${bin_dir}/cert-manager-crds/"
  done
  log "cert-manager ${version} CRDs: ${bin_dir}/cert-manager-crds"
  linked+=(cert-manager-crds/)
}

linked=()
tools=("$@")
if ((${#tools[@]} == 0)); then
  tools=(etcd kwok helm images provisioner kube-router kubernetes cert-manager s3)
fi
for tool in "${tools[@]}"; do
  build_tool "$tool"
  [[ $tool != cert-manager ]] || fetch_cert_manager_crds
done
log "ready in ${bin_dir}: ${linked[*]}"
