#!/usr/bin/env bash
# make run / make stop: the operator on the local test bed, as a developer runs it.
#
#   start: bed up, binaries built, certs/ made, CRD applied, redis-webhook and redis-controller
#          started in the background, the webhook registered with the API server by
#          url: https://127.0.0.1:$WEBHOOK_PORT + caBundle (certs/ca.crt).
#   stop:  unregister the webhook, stop both processes.
# State: .cluster/run/ (pids, logs). Ports: WEBHOOK_PORT (9443), WEBHOOK_METRICS_PORT (8081),
# CONTROLLER_METRICS_PORT (8080).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
run_dir=.cluster/run
webhook_port=${WEBHOOK_PORT:-9443}
webhook_ops=${WEBHOOK_METRICS_PORT:-8081}
controller_ops=${CONTROLLER_METRICS_PORT:-8080}
config_name=redis-operator-local
export KUBECONFIG=${KUBECONFIG:-$root/.cluster/kubeconfig}
kubectl=bin/kubectl
[[ -x $kubectl ]] || kubectl=kubectl

log() { printf '[run] %s\n' "$*" >&2; }

# alive NAME: the pid of NAME if it still runs our binary.
alive() {
  local file="$run_dir/$1.pid" pid
  [[ -f $file ]] || return 1
  pid=$(<"$file")
  [[ $(tr '\0' '\n' 2>/dev/null <"/proc/$pid/cmdline" | head -n1) == *"/$1" ]] && echo "$pid"
}

stop() {
  "$kubectl" delete mutatingwebhookconfiguration,validatingwebhookconfiguration "$config_name" \
    --ignore-not-found >/dev/null 2>&1 || true
  local name pid
  for name in redis-controller redis-webhook; do
    if pid=$(alive "$name"); then
      kill -TERM "$pid" && log "stopped $name (pid $pid)"
    fi
    rm -f "$run_dir/$name.pid"
  done
}

# configuration KIND PATH: the KIND (mutating or validating) webhook configuration $config_name,
# calling https://127.0.0.1:$webhook_port/PATH with certs/ca.crt as caBundle, for
# every namespace but the e2e suite's (which registers webhooks of its own). The webhook itself
# (name, rules, failurePolicy, timeoutSeconds...) is the chart's
# charts/redis-operator/files/KIND-webhook.yaml, indented into place: the chart and the e2e suite
# register that file too.
configuration() {
  local kind=$1 path=$2
  cat <<YAML
apiVersion: admissionregistration.k8s.io/v1
kind: ${kind^}WebhookConfiguration
metadata:
  name: $config_name
webhooks:
  - clientConfig:
      url: https://127.0.0.1:$webhook_port/$path
      caBundle: $(base64 -w0 certs/ca.crt)
    namespaceSelector:
      matchExpressions: [{key: e2e.redis-operator/test, operator: DoesNotExist}]
YAML
  sed -e '/^#/d' -e '/^---/d' -e 's/^/    /' "charts/redis-operator/files/$kind-webhook.yaml"
}

wait_http() { # wait_http URL WHAT
  local i
  for i in $(seq 1 300); do
    curl -sf "$1" >/dev/null && return 0
    sleep 0.1
  done
  log "$2 did not become ready; its log:"
  tail -n 30 "$run_dir/$2.log" >&2
  return 1
}

start() {
  hack/cluster/up.sh
  log "building redis-webhook and redis-controller"
  cargo build --locked -q --bins
  make -s certs
  "$kubectl" apply --server-side --force-conflicts -f deploy/crd.yaml >/dev/null
  "$kubectl" wait --for condition=Established crd/redis.myapp.tangx.in crd/redisbackups.myapp.tangx.in --timeout=60s >/dev/null
  stop
  mkdir -p "$run_dir"

  target/debug/redis-webhook --bind "127.0.0.1:$webhook_port" --ops-bind "127.0.0.1:$webhook_ops" \
    --tls-cert-file certs/tls.crt --tls-key-file certs/tls.key >"$run_dir/redis-webhook.log" 2>&1 &
  echo $! >"$run_dir/redis-webhook.pid"
  wait_http "http://127.0.0.1:$webhook_ops/readyz" redis-webhook
  log "redis-webhook serving on https://127.0.0.1:$webhook_port (log: $run_dir/redis-webhook.log)"

  { configuration mutating mutate; echo ---; configuration validating validate; } | "$kubectl" apply -f - >/dev/null
  log "webhook registered with the API server ($config_name, url + caBundle)"

  target/debug/redis-controller --ops-bind "127.0.0.1:$controller_ops" >"$run_dir/redis-controller.log" 2>&1 &
  echo $! >"$run_dir/redis-controller.pid"
  wait_http "http://127.0.0.1:$controller_ops/readyz" redis-controller
  log "redis-controller running (metrics http://127.0.0.1:$controller_ops/metrics, log: $run_dir/redis-controller.log)"
  log "try: export KUBECONFIG=$KUBECONFIG; kubectl apply -f deploy/samples/redis.yaml; kubectl get redis,pods"
  log "stop: make stop (the operator) or make cluster-down (everything)"
}

case ${1:-start} in
  start) start ;;
  stop) stop ;;
  *) echo "usage: $0 [start|stop]" >&2; exit 2 ;;
esac
