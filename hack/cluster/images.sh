#!/usr/bin/env bash
# Images for the test bed's real node, built without a container engine or a registry and
# imported into the bed's containerd (hack/cluster/node/node.sh):
#
#   images.sh base                         the pod sandbox image (registry.k8s.io/pause:3.10, our
#                                          bin/pause) and the Redis image (localhost/redis:bed, and
#                                          localhost/redis:<version>): Debian's redis-server,
#                                          redis-cli, dash as /bin/sh and coreutils' timeout and
#                                          sleep with the libraries they link, uid 999;
#                                          and the metrics exporter (localhost/redis-exporter:bed,
#                                          and localhost/redis-exporter:<version>): Debian's
#                                          prometheus-redis-exporter (oliver006's redis_exporter,
#                                          unpacked by node/packages.sh) as /redis_exporter, the
#                                          upstream image's path, entrypoint and uid 59000
#   images.sh operator IMG_CONTROLLER IMG_WEBHOOK
#                                          redis-controller and redis-webhook from target/release
#                                          (IMAGE_PROFILE's directory when set, debug
#                                          info stripped from a dev build; CARGO_TARGET_DIR
#                                          honoured), as `make docker-build` names
#                                          them: the binary in /usr/local/bin, uid 65532; the
#                                          controller's image also carries redis-backup (its
#                                          backup Jobs and restore init containers run it) and
#                                          Debian's CA bundle, as distroless/cc does
#
# Each image is packed by bin/oci-image (hack/cluster/images) into bin/images/NAME.tar, rebuilt
# only when its inputs change, and imported when the bed is up (skipped with a note otherwise).
set -euo pipefail
# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# shellcheck source=node/node.sh
source "${cluster_here}/node/node.sh"

log() { printf '[images] %s\n' "$*" >&2; }

images_dir="${bin_dir}/images"
# Where node/packages.sh unpacks the .debs it does not install.
debs_dir=${REDIS_OPERATOR_CACHE:-${XDG_CACHE_HOME:-${HOME}/.cache}/redis-operator}/debs
mkdir -p "$images_dir"
[[ -x ${bin_dir}/oci-image && -x ${bin_dir}/pause ]] || "${cluster_here}/build.sh" images

# copy_binary ROOTFS SRC DEST: SRC (links resolved) at DEST in ROOTFS, and every library it links.
copy_binary() {
  local rootfs=$1 src=$2 dest=$3 lib
  install -D -m 0755 "$(readlink -f "$src")" "${rootfs}${dest}"
  while read -r lib; do
    [[ -e ${rootfs}${lib} ]] || install -D -m 0755 "$(readlink -f "$lib")" "${rootfs}${lib}"
  done < <(ldd "$src" | awk '/=> \// { print $3 } /^[[:space:]]*\/[^ ]*ld-linux/ { print $1 }')
}

# base_files ROOTFS USER UID: /etc/passwd, /etc/group, /tmp as in a minimal distro image.
base_files() {
  local rootfs=$1 user=$2 uid=$3
  mkdir -p "${rootfs}/etc" "${rootfs}/tmp"
  chmod 1777 "${rootfs}/tmp"
  printf 'root:x:0:0:root:/root:/sbin/nologin\n%s:x:%s:%s:%s:/nonexistent:/sbin/nologin\n' \
    "$user" "$uid" "$uid" "$user" >"${rootfs}/etc/passwd"
  printf 'root:x:0:\n%s:x:%s:\n' "$user" "$uid" >"${rootfs}/etc/group"
  printf 'hosts: files dns\n' >"${rootfs}/etc/nsswitch.conf"
}

# pack NAME ROOTFS OCI-IMAGE-ARGS...: bin/images/NAME.tar unless one from the same inputs exists.
pack() {
  local name=$1 rootfs=$2 out="${images_dir}/$1.tar"
  shift 2
  local key
  key=$({
    printf '%s\n' "$@"
    (cd "$rootfs" && find . -printf '%p %m %U %G %s\n' | sort && find . -type f -print0 | sort -z | xargs -0r cat)
  } | sha256sum | cut -c1-16)
  if [[ -f $out && $(cat "${out}.key" 2>/dev/null) == "$key" ]]; then
    log "${name}: unchanged (${out})"
    return
  fi
  "${bin_dir}/oci-image" --rootfs "$rootfs" --out "$out" "$@"
  echo "$key" >"${out}.key"
  log "${name}: packed $(du -h "$out" | cut -f1) into ${out}"
}

# import NAME: load bin/images/NAME.tar into the containerd of every real node that runs one.
import() {
  local node into=()
  for node in $(node_names); do
    [[ -n $(pid_of "containerd-${node}") ]] || continue
    node_use "$(node_index "$node")"
    node_ctr images import --no-unpack=false "${images_dir}/$1.tar" >/dev/null
    into+=("$node")
  done
  if ((${#into[@]} == 0)); then
    log "$1: no real node's containerd is running (make cluster-up imports on start)"
  else
    log "$1: imported into the containerd of ${into[*]}"
  fi
}

build_base() {
  local work
  work=$(mktemp -d)
  trap 'rm -rf "$work"' RETURN

  mkdir -p "${work}/pause"
  install -D -m 0755 "${bin_dir}/pause" "${work}/pause/pause"
  pack pause "${work}/pause" --tag "$PAUSE_IMAGE" --entrypoint /pause --user 65535:65535

  local redis_version
  redis_version=$(redis-server --version | sed -n 's/.* v=\([0-9.]*\).*/\1/p')
  [[ -n $redis_version ]] || { log "cannot read redis-server's version"; exit 1; }
  local rootfs="${work}/redis"
  copy_binary "$rootfs" /usr/bin/redis-server /usr/bin/redis-server
  copy_binary "$rootfs" /usr/bin/redis-cli /usr/bin/redis-cli
  # A POSIX shell, as the official images have (Debian's dash, alpine's busybox ash): a Redis
  # with auth starts through `sh -c` (the controller's pods::build::AUTH_LAUNCHER).
  copy_binary "$rootfs" /usr/bin/dash /bin/sh
  # coreutils' timeout and sleep, as Debian's official image has them: redis-cli 7.0 has no
  # connect timeout, and a probe through a policy that drops its packets must end; a probe
  # retries while the policy engine learns its new pod's IP (e2e network_policy).
  copy_binary "$rootfs" /usr/bin/timeout /usr/bin/timeout
  copy_binary "$rootfs" /usr/bin/sleep /usr/bin/sleep
  base_files "$rootfs" redis 999
  install -d -m 0755 -o 999 -g 999 "${rootfs}/data"
  pack redis "$rootfs" --tag localhost/redis:bed --tag "localhost/redis:${redis_version}" \
    --user 999:999 --workdir /data --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    --cmd redis-server

  # oliver006/redis_exporter: a Go binary linking only libc; /metrics on :9121; reads REDIS_ADDR,
  # REDIS_USER and REDIS_PASSWORD from the environment (or the -redis.* flags).
  local exporter="${debs_dir}/prometheus-redis-exporter" exporter_version
  [[ -f ${exporter}/.deb-version ]] || "${cluster_here}/node/packages.sh"
  exporter_version=$(sed 's/-[^-]*$//' "${exporter}/.deb-version") # 1.45.0-2+b4: 1.45.0
  [[ -n $exporter_version ]] || { log "cannot read prometheus-redis-exporter's version"; exit 1; }
  rootfs="${work}/redis-exporter"
  copy_binary "$rootfs" "${exporter}/usr/bin/prometheus-redis-exporter" /redis_exporter
  base_files "$rootfs" exporter 59000
  pack redis-exporter "$rootfs" --tag localhost/redis-exporter:bed \
    --tag "localhost/redis-exporter:${exporter_version}" --user 59000:59000 --entrypoint /redis_exporter

  import pause
  import redis
  import redis-exporter
}

build_operator() {
  local img_controller=$1 img_webhook=$2 target binary img work
  local profile=${IMAGE_PROFILE:-release} dir
  # Cargo keeps the `dev` profile's output in target/debug.
  dir=$profile
  [[ $profile != dev ]] || dir=debug
  target=${CARGO_TARGET_DIR:-${cluster_root}/target}/${dir}
  work=$(mktemp -d)
  trap 'rm -rf "$work"' RETURN
  local carried extra=()
  for binary in redis-controller redis-webhook; do
    img=$img_controller
    extra=(redis-backup)
    [[ $binary == redis-controller ]] || { img=$img_webhook; extra=(); }
    for carried in "$binary" "${extra[@]}"; do
      [[ -x ${target}/${carried} ]] || { log "no ${target}/${carried}: run 'cargo build --profile ${profile} --bins' first"; exit 1; }
      copy_binary "${work}/${binary}" "${target}/${carried}" "/usr/local/bin/${carried}"
      # A dev build carries ~200 MB of debug info per binary: not into three containerds.
      [[ $profile != dev ]] || strip --strip-debug "${work}/${binary}/usr/local/bin/${carried}"
    done
    base_files "${work}/${binary}" nonroot 65532
    # The CA bundle distroless/cc carries (Debian's ca-certificates): redis-backup's HTTP client
    # loads the system's roots when it starts, for https endpoints, and refuses to start without.
    [[ $binary != redis-controller ]] ||
      install -D -m 0644 /etc/ssl/certs/ca-certificates.crt "${work}/${binary}/etc/ssl/certs/ca-certificates.crt"
    pack "$binary" "${work}/${binary}" --tag "$img" --user 65532:65532 --entrypoint "/usr/local/bin/${binary}"
    import "$binary"
  done
}

case ${1:-} in
  base) build_base ;;
  operator)
    (($# == 3)) || { echo "usage: $0 operator IMG_CONTROLLER IMG_WEBHOOK" >&2; exit 2; }
    build_operator "$2" "$3"
    ;;
  *)
    echo "usage: $0 base | operator IMG_CONTROLLER IMG_WEBHOOK" >&2
    exit 2
    ;;
esac
