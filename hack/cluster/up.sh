#!/usr/bin/env bash
# Starts the test bed: a real Kubernetes control plane on 127.0.0.1, in the background.
#
#   etcd, kube-apiserver (client certificates, Node+RBAC, PodSecurity, audit log),
#   kube-controller-manager, kube-scheduler, kwok simulating two fake nodes so that
#   scheduled pods become Running and Ready without a container runtime, and REAL_NODES real
#   nodes (default 3; each its own containerd, runc, CNI bridge and kubelet; one kube-proxy:
#   node/node.sh) whose pods really run; then the bed's daemons: volumes (bed-provisioner),
#   NetworkPolicies (bed-firewall), cert-manager's controller and CRDs (bed-cert-manager), and an
#   S3-compatible object store for backups (versitygw, on 10.88.0.1:7070; s3/env has its keys).
#
# Binaries come from hack/cluster/build.sh (cached). State lives in <repo>/.cluster/:
#   kubeconfig   admin kubeconfig (user "admin", group system:masters)
#   logs/        one log per component        audit.log   every API write, with its user
#   pids/        pid files (used by down.sh)  ports.env   the ports picked at start
#   s3/          the S3 store's data/, env (endpoint, region, keys, bucket) and curlrc
# Ports are picked free at start, so several checkouts can run side by side (the S3 store's port
# is fixed; the real nodes, and so the S3 store's address, are one per machine anyway).
# Running it again while the bed is up and healthy does nothing.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR

# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# shellcheck source=node/node.sh
source "${cluster_here}/node/node.sh"

log() { printf '[cluster-up] %s\n' "$*" >&2; }

# healthy: every component runs (as our process) and the API server is ready.
healthy() {
  local name
  [[ -f "${state_dir}/kubeconfig" && -f "${state_dir}/ports.env" ]] || return 1
  # shellcheck source=/dev/null
  source "${state_dir}/ports.env"
  [[ ${REAL_NODES_UP:-} == "${REAL_NODES}" ]] || return 1
  local nodes=() i
  for ((i = 0; i < REAL_NODES_UP; i++)); do nodes+=("real-node-${i}"); done
  for name in $(components "${nodes[@]}"); do
    [[ -n $(pid_of "$name") ]] || return 1
  done
  [[ -z $(ls -A "$fault_dir" 2>/dev/null) ]] || return 1
  api_get "/readyz" >/dev/null
}

# api_get PATH: GET from the API server as admin.
api_get() {
  curl --silent --show-error --fail --max-time 5 \
    --cacert "${pki_dir}/ca.crt" --cert "${pki_dir}/admin.crt" --key "${pki_dir}/admin.key" \
    "https://127.0.0.1:${APISERVER_PORT}$1"
}

if (healthy); then
  log "already up and healthy: export KUBECONFIG=${state_dir}/kubeconfig"
  exit 0
fi
if [[ -d $state_dir ]]; then
  log "found a stopped or unhealthy test bed in ${state_dir}: cleaning it up first"
  "${cluster_here}/down.sh"
fi

"${cluster_here}/build.sh"
"${cluster_here}/node/packages.sh"

for tool in openssl curl python3 containerd runc ctr iptables ip; do
  command -v "$tool" >/dev/null || { log "needs '${tool}' on PATH"; exit 1; }
done

mkdir -p "$pid_dir" "$log_dir" "$pki_dir"
chmod 700 "$state_dir" "$pki_dir"

# On any failure: show the failing component's log, stop what we started, keep the logs.
failed_component=""
on_exit() {
  local rc=$?
  if ((rc != 0)); then
    if [[ -n $failed_component && -f "${log_dir}/${failed_component}.log" ]]; then
      log "${failed_component} did not come up; last lines of ${log_dir}/${failed_component}.log:"
      tail -n 40 "${log_dir}/${failed_component}.log" >&2
    fi
    log "stopping what was started (logs stay in ${log_dir} until the next cluster-up/cluster-down)"
    KEEP_STATE=1 "${cluster_here}/down.sh" || true
  fi
}
trap on_exit EXIT

# --- ports -------------------------------------------------------------------------
[[ $REAL_NODES =~ ^[1-9][0-9]?$ ]] || { log "REAL_NODES=${REAL_NODES}: give a number of real nodes, 1 to 99"; exit 1; }
# Bind port 0 on 127.0.0.1 for each port at once, so the kernel hands out distinct free ports
# (8 for the control plane and kube-proxy, 2 per real node: kubelet's and its healthz).
ports=$(python3 -c '
import socket, sys
socks = [socket.socket() for _ in range(8 + 2 * int(sys.argv[1]))]
for s in socks:
    s.bind(("127.0.0.1", 0))
print(" ".join(str(s.getsockname()[1]) for s in socks))
' "$REAL_NODES")
read -r ETCD_CLIENT_PORT ETCD_PEER_PORT APISERVER_PORT KCM_PORT SCHEDULER_PORT KWOK_PORT \
  PROXY_HEALTHZ_PORT PROXY_METRICS_PORT KUBELET_PORTS <<<"$ports"
cat >"${state_dir}/ports.env" <<EOF
REAL_NODES_UP=${REAL_NODES}
KUBELET_PORTS="${KUBELET_PORTS}"
ETCD_CLIENT_PORT=${ETCD_CLIENT_PORT}
ETCD_PEER_PORT=${ETCD_PEER_PORT}
APISERVER_PORT=${APISERVER_PORT}
KCM_PORT=${KCM_PORT}
SCHEDULER_PORT=${SCHEDULER_PORT}
KWOK_PORT=${KWOK_PORT}
PROXY_HEALTHZ_PORT=${PROXY_HEALTHZ_PORT}
PROXY_METRICS_PORT=${PROXY_METRICS_PORT}
EOF
apiserver_url="https://127.0.0.1:${APISERVER_PORT}"

# --- certificates --------------------------------------------------------------------
log "generating certificates in ${pki_dir}"
(
  cd "$pki_dir"
  openssl_quiet() { openssl "$@" 2>/dev/null; }
  openssl_quiet req -x509 -newkey rsa:2048 -nodes -days 3650 -sha256 \
    -keyout ca.key -out ca.crt -subj "/CN=redis-operator-test-bed-ca" \
    -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign,digitalSignature"
  # sign NAME SUBJECT EXT: a key and a certificate signed by the CA.
  sign() {
    openssl_quiet req -newkey rsa:2048 -nodes -keyout "$1.key" -out "$1.csr" -subj "$2"
    openssl_quiet x509 -req -in "$1.csr" -CA ca.crt -CAkey ca.key -CAcreateserial -days 3650 -sha256 \
      -out "$1.crt" -extfile <(printf '%s\n' "$3")
    rm -f "$1.csr"
  }
  sign apiserver "/CN=kube-apiserver" "$(printf '%s\n' \
    "basicConstraints=critical,CA:FALSE" "keyUsage=critical,digitalSignature,keyEncipherment" \
    "extendedKeyUsage=serverAuth" \
    "subjectAltName=IP:127.0.0.1,IP:10.96.0.1,IP:${HOST_IP},DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local")"
  client_ext=$(printf '%s\n' "basicConstraints=critical,CA:FALSE" \
    "keyUsage=critical,digitalSignature,keyEncipherment" "extendedKeyUsage=clientAuth")
  sign admin "/O=system:masters/CN=admin" "$client_ext"
  sign kube-controller-manager "/CN=system:kube-controller-manager" "$client_ext"
  sign kube-scheduler "/CN=system:kube-scheduler" "$client_ext"
  sign kwok "/O=system:masters/CN=kwok" "$client_ext"
  # cert-manager's controller: its own name, so the audit log tells its writes apart.
  sign bed-cert-manager "/O=system:masters/CN=bed-cert-manager" "$client_ext"
  # Each real node: kubelet's identity (Node authorizer) and its serving certificate. The API
  # server's client certificate for kubelets (logs, exec), kube-proxy's identity.
  for ((i = 0; i < REAL_NODES; i++)); do
    node_use "$i"
    sign "node-${NODE_NAME}" "/O=system:nodes/CN=system:node:${NODE_NAME}" "$client_ext"
    sign "kubelet-${NODE_NAME}" "/CN=${NODE_NAME}" "$(printf '%s\n' "basicConstraints=critical,CA:FALSE" \
      "keyUsage=critical,digitalSignature,keyEncipherment" "extendedKeyUsage=serverAuth" \
      "subjectAltName=IP:${NODE_IP},DNS:${NODE_NAME}")"
  done
  sign apiserver-kubelet-client "/O=system:masters/CN=kube-apiserver-kubelet-client" "$client_ext"
  sign kube-proxy "/CN=system:kube-proxy" "$client_ext"
  # Service-account token signing keys.
  openssl_quiet genrsa -out sa.key 2048
  openssl_quiet rsa -in sa.key -pubout -out sa.pub
  chmod 600 ./*.key
)

# write_kubeconfig FILE USER: a kubeconfig for USER's client certificate, certificates embedded.
write_kubeconfig() {
  local file=$1 user=$2
  b64() { base64 -w0 <"$1"; }
  cat >"$file" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: redis-operator-test-bed
  cluster:
    server: ${apiserver_url}
    certificate-authority-data: $(b64 "${pki_dir}/ca.crt")
users:
- name: ${user}
  user:
    client-certificate-data: $(b64 "${pki_dir}/${user}.crt")
    client-key-data: $(b64 "${pki_dir}/${user}.key")
contexts:
- name: ${user}@redis-operator-test-bed
  context:
    cluster: redis-operator-test-bed
    user: ${user}
    namespace: default
current-context: ${user}@redis-operator-test-bed
EOF
  chmod 600 "$file"
}
for user in kube-controller-manager kube-scheduler kwok kube-proxy bed-cert-manager; do
  write_kubeconfig "${state_dir}/${user}.kubeconfig" "$user"
done
for ((i = 0; i < REAL_NODES; i++)); do
  node_use "$i"
  write_kubeconfig "${state_dir}/node-${NODE_NAME}.kubeconfig" "node-${NODE_NAME}"
done

# --- processes (start, wait_until: lib.sh) ---------------------------------------------
start etcd \
  --name=test-bed \
  --data-dir="${state_dir}/etcd" \
  --listen-client-urls="http://127.0.0.1:${ETCD_CLIENT_PORT}" \
  --advertise-client-urls="http://127.0.0.1:${ETCD_CLIENT_PORT}" \
  --listen-peer-urls="http://127.0.0.1:${ETCD_PEER_PORT}" \
  --initial-advertise-peer-urls="http://127.0.0.1:${ETCD_PEER_PORT}" \
  --initial-cluster="test-bed=http://127.0.0.1:${ETCD_PEER_PORT}" \
  --unsafe-no-fsync \
  --log-level=warn
wait_until etcd 60 curl --silent --fail --max-time 2 "http://127.0.0.1:${ETCD_CLIENT_PORT}/health"

# The host address and guards first: the API server is advertised on the host address.
node_check_alone
# Whatever a bed that was killed rather than stopped left behind (containers, cgroups, chains).
node_cleanup
log "setting up the host network (${HOST_IF} ${HOST_IP}, pods of ${REAL_NODES} real nodes in ${POD_CIDR})"
host_network_up

# --bind-address=0.0.0.0, --advertise-address=HOST_IP: pods on the real nodes reach the API server
# through the "kubernetes" Service (10.96.0.1), whose endpoint is the host address.
# --allow-privileged: so that Pod Security admission, not this flag, decides about privileged pods.
# PodNodeSelector, PodTolerationRestriction: a test namespace annotated for the real nodes puts
# every pod there.
# --default-*-toleration-seconds: a pod on a node that stopped answering is evicted 10 s after the
# node is marked unreachable (5 min by default), so node-loss tests finish in minutes.
start kube-apiserver \
  --bind-address=0.0.0.0 \
  --advertise-address="${HOST_IP}" \
  --secure-port="${APISERVER_PORT}" \
  --etcd-servers="http://127.0.0.1:${ETCD_CLIENT_PORT}" \
  --tls-cert-file="${pki_dir}/apiserver.crt" \
  --tls-private-key-file="${pki_dir}/apiserver.key" \
  --client-ca-file="${pki_dir}/ca.crt" \
  --authorization-mode=Node,RBAC \
  --enable-admission-plugins=NodeRestriction,PodNodeSelector,PodTolerationRestriction \
  --kubelet-client-certificate="${pki_dir}/apiserver-kubelet-client.crt" \
  --kubelet-client-key="${pki_dir}/apiserver-kubelet-client.key" \
  --kubelet-certificate-authority="${pki_dir}/ca.crt" \
  --kubelet-preferred-address-types=InternalIP \
  --allow-privileged=true \
  --service-cluster-ip-range=10.96.0.0/16 \
  --default-not-ready-toleration-seconds=10 \
  --default-unreachable-toleration-seconds=10 \
  --service-account-issuer=https://kubernetes.default.svc.cluster.local \
  --service-account-key-file="${pki_dir}/sa.pub" \
  --service-account-signing-key-file="${pki_dir}/sa.key" \
  --audit-policy-file="${cluster_here}/audit-policy.yaml" \
  --audit-log-path="${state_dir}/audit.log" \
  --audit-log-mode=blocking \
  --audit-log-format=json \
  --profiling=false \
  --v=1
wait_until kube-apiserver 180 api_get /readyz
write_kubeconfig "${state_dir}/admin.kubeconfig" admin
mv "${state_dir}/admin.kubeconfig" "${state_dir}/kubeconfig"

start kube-controller-manager \
  --kubeconfig="${state_dir}/kube-controller-manager.kubeconfig" \
  --bind-address=127.0.0.1 \
  --secure-port="${KCM_PORT}" \
  --cert-dir="${state_dir}/kube-controller-manager" \
  --controllers='*' \
  --use-service-account-credentials=true \
  --service-account-private-key-file="${pki_dir}/sa.key" \
  --root-ca-file="${pki_dir}/ca.crt" \
  --cluster-signing-cert-file="${pki_dir}/ca.crt" \
  --cluster-signing-key-file="${pki_dir}/ca.key" \
  --leader-elect=false \
  --node-monitor-period=2s \
  --node-monitor-grace-period=20s \
  --profiling=false \
  --v=1

start kube-scheduler \
  --kubeconfig="${state_dir}/kube-scheduler.kubeconfig" \
  --bind-address=127.0.0.1 \
  --secure-port="${SCHEDULER_PORT}" \
  --cert-dir="${state_dir}/kube-scheduler" \
  --leader-elect=false \
  --profiling=false \
  --v=1

# kwok reads ~/.kwok/kwok.yaml when it exists: give it a home of its own.
mkdir -p "${state_dir}/kwok-home"
stage_args=()
for stage in "${cluster_here}"/kwok/stages/*.yaml; do
  stage_args+=("--config=${stage}")
done
HOME="${state_dir}/kwok-home" start kwok \
  --kubeconfig="${state_dir}/kwok.kubeconfig" \
  --manage-all-nodes=false \
  --manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake \
  --node-ip=127.0.0.1 \
  --node-port="${KWOK_PORT}" \
  --server-address="127.0.0.1:${KWOK_PORT}" \
  --cidr=10.244.0.1/16 \
  --node-lease-duration-seconds=16 \
  "${stage_args[@]}"

log "creating the fake nodes"
failed_component=kube-apiserver
kubectl apply --server-side --field-manager=test-bed -f "${cluster_here}/nodes.yaml" >/dev/null
failed_component=""

# --- the real nodes ------------------------------------------------------------------------
nodes=()
read -r -a kubelet_ports <<<"$KUBELET_PORTS"
for ((i = 0; i < REAL_NODES; i++)); do
  node_use "$i"
  nodes+=("$NODE_NAME")
  node_write_configs "${kubelet_ports[2 * i]}" "${kubelet_ports[2 * i + 1]}"
  node_start_containerd
done
"${cluster_here}/images.sh" base
for ((i = 0; i < REAL_NODES; i++)); do
  node_use "$i"
  node_start_kubelet
done
proxy_write_config "$PROXY_HEALTHZ_PORT" "$PROXY_METRICS_PORT"
start kube-proxy --config="${nodes_dir}/kube-proxy/config.yaml" --v=1
# Volumes for claims on the real nodes: directories under .cluster/node/volumes/<node>/, as
# `local` PersistentVolumes pinned to that node (provisioner/), through the default StorageClass
# bed-local.
nodes_csv=$(IFS=,; echo "${nodes[*]}")
start bed-provisioner \
  --kubeconfig="${state_dir}/kubeconfig" \
  --root="${volumes_dir}" \
  --nodes="${nodes_csv}" \
  --provisioner-name=redis-operator.dev/bed-local
kubectl apply --server-side --field-manager=test-bed -f "${cluster_here}/storageclass.yaml" >/dev/null

wait_until kube-controller-manager 120 curl --silent --fail --insecure --max-time 2 "https://127.0.0.1:${KCM_PORT}/healthz"
wait_until kube-scheduler 120 curl --silent --fail --insecure --max-time 2 "https://127.0.0.1:${SCHEDULER_PORT}/healthz"
# The serviceaccount controller creates "default" in every namespace; pods need it.
wait_until kube-controller-manager 120 kubectl get serviceaccount default --namespace default
wait_until kwok 120 kubectl wait node --selector=type=kwok --for=condition=Ready --timeout=2s
for node in "${nodes[@]}"; do
  wait_until "kubelet-${node}" 180 kubectl wait node "$node" --for=condition=Ready --timeout=2s
done
wait_until kube-proxy 60 curl --silent --fail --max-time 2 "http://127.0.0.1:${PROXY_HEALTHZ_PORT}/healthz"
# NetworkPolicies are enforced on the real nodes' pods: kube-router's firewall, one for every real
# node (they share this network namespace; bed-firewall/main.go says why one), as the first node.
# It reads pods, namespaces and policies with the bed's admin identity.
start bed-firewall \
  --kubeconfig="${state_dir}/kubeconfig" \
  --hostname-override="${nodes[0]}" \
  --bed-nodes="${nodes_csv}" \
  --run-firewall=true --run-router=false --run-service-proxy=false \
  --service-cluster-ip-range="${SERVICE_CIDR}" \
  --enable-ipv6=false --health-port=0 --metrics-port=0 --v=1
wait_until bed-firewall 60 iptables -w -S KUBE-ROUTER-FORWARD
# cert-manager: its CRDs (all six, as a release installs them) and its own controllers for
# Certificates with selfSigned and CA issuers (cert-manager/bed-cert-manager/main.go says which and
# why our own main), as its own user. The label tells the e2e suite that this cert-manager has no
# cainjector, so the tests fill a caBundle themselves. A failed issuance is retried after 10 s,
# doubling up to a minute (upstream: an hour, up to 32 hours), within a test's patience.
failed_component=kube-apiserver
kubectl apply --server-side --field-manager=test-bed -f "${bin_dir}/cert-manager-crds" >/dev/null
kubectl label --overwrite -f "${bin_dir}/cert-manager-crds" redis-operator.dev/served-by=bed-cert-manager >/dev/null
failed_component=""
wait_until kube-apiserver 60 kubectl wait --for=condition=Established --timeout=2s -f "${bin_dir}/cert-manager-crds"
start bed-cert-manager \
  --kubeconfig="${state_dir}/bed-cert-manager.kubeconfig" \
  --certificate-request-minimum-backoff=10s \
  --certificate-request-maximum-backoff=1m \
  --v=2
wait_until bed-cert-manager 60 grep -q '"all caches synced"' "${log_dir}/bed-cert-manager.log"

# --- S3 object storage -------------------------------------------------------------------------
# versitygw (s3/; README "S3 object storage"), the backup/restore tests' object store: an S3 gateway
# whose posix backend keeps each bucket as a directory of s3/data/. It listens only on the host
# address, which the host and the real nodes' pods both reach. Its one identity is its root user
# (every right), with keys made here at random and handed to it in its environment, not its
# command line; a request not signed with them gets 403. The tests read s3/env (e2e::s3::S3Bed),
# written once the bucket "backups" exists; s3/curlrc signs curl's requests (README).
mkdir -p "${s3_dir}/data"
chmod 700 "$s3_dir"
s3_access_key=$(openssl rand -hex 10 | tr a-f A-F)
s3_secret_key=$(openssl rand -hex 20)
s3_endpoint="http://${HOST_IP}:${s3_port}"
# curl 7.88's --aws-sigv4 signs the body's hash but does not send it, and versitygw wants the
# header on every request: UNSIGNED-PAYLOAD (the body is not hashed, the headers still signed).
(
  umask 077
  printf '%s\n' 'aws-sigv4 = "aws:amz:us-east-1:s3"' "user = \"${s3_access_key}:${s3_secret_key}\"" \
    'header = "x-amz-content-sha256: UNSIGNED-PAYLOAD"' >"${s3_dir}/curlrc"
)
s3_curl() { curl --config "${s3_dir}/curlrc" --silent --show-error --fail --max-time 5 "$@"; }
# versitygw also reads settings from its environment (VGW_*, and LOGFILE or WEBHOOK would send
# its access log to a file or a URL): only the keys given here.
unset "${!VGW_@}" LOGFILE WEBHOOK ROOT_ACCESS_KEY ROOT_SECRET_KEY
ROOT_ACCESS_KEY_ID=$s3_access_key ROOT_SECRET_ACCESS_KEY=$s3_secret_key start versitygw \
  --port "${HOST_IP}:${s3_port}" \
  --region us-east-1 \
  posix "${s3_dir}/data"
wait_until versitygw 30 s3_curl --output /dev/null "${s3_endpoint}/"
failed_component=versitygw
s3_curl --output /dev/null --request PUT "${s3_endpoint}/backups"
failed_component=""
(
  umask 077
  cat >"${s3_dir}/env.tmp" <<EOF
S3_ENDPOINT=${s3_endpoint}
S3_REGION=us-east-1
S3_ACCESS_KEY_ID=${s3_access_key}
S3_SECRET_ACCESS_KEY=${s3_secret_key}
S3_BUCKET=backups
EOF
  mv -f "${s3_dir}/env.tmp" "${s3_dir}/env"
)

# The kubelets evict and taint their node (disk pressure: no pod is scheduled there) once the
# disk holding .cluster/ has under 1% free (node.sh, evictionHard); a cold build of the workspace
# alone takes ~16 GB. Said here, where it can still be understood.
free_gb=$(df --output=avail -BG "$state_dir" 2>/dev/null | tail -1 | tr -dc '0-9')
used_pct=$(df --output=pcent "$state_dir" 2>/dev/null | tail -1 | tr -dc '0-9')
if [[ -n $free_gb && -n $used_pct ]] && { ((free_gb < 20)) || ((used_pct > 95)); }; then
  log "WARNING: ${free_gb} GB free on the disk of ${state_dir} (${used_pct}% used): builds may fill it, and below 1% free the kubelets taint the real nodes with disk pressure and schedule nothing"
fi
log "up: $(kubectl version 2>/dev/null | tr '\n' ' ')"
log "nodes: $(kubectl get nodes --no-headers 2>/dev/null | awk '{print $1 "=" $2}' | tr '\n' ' ')"
log "export KUBECONFIG=${state_dir}/kubeconfig   (logs: ${log_dir}, audit log: ${state_dir}/audit.log)"
log "S3: ${s3_endpoint}, bucket backups (keys: ${s3_dir}/env; curl --config ${s3_dir}/curlrc ${s3_endpoint}/backups)"
