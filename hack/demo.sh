#!/usr/bin/env bash
# make demo: the tutorial, end to end, on this machine. Builds what is missing, starts the local
# control plane, runs the operator (hack/run.sh), creates the tutorial's Redis, and shows an
# invalid one being refused at admission.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
export KUBECONFIG=${KUBECONFIG:-$root/.cluster/kubeconfig}
kubectl=bin/kubectl
namespace=${DEMO_NAMESPACE:-demo}

step() { printf '\n\033[1m==> %s\033[0m\n' "$*"; }

step "Starting the local control plane and the operator (first run builds Kubernetes from Go modules: ~16 min on 2 cores)"
hack/run.sh start
[[ -x $kubectl ]] || kubectl=kubectl

step "Namespace $namespace, enforcing Pod Security \"restricted\""
"$kubectl" create namespace "$namespace" --dry-run=client -o yaml | "$kubectl" apply -f - >/dev/null
"$kubectl" label namespace "$namespace" --overwrite pod-security.kubernetes.io/enforce=restricted >/dev/null

step "kubectl apply -f deploy/samples/redis.yaml (the tutorial's my-op-redis: 2 replicas, redis:5-alpine, port 8333)"
"$kubectl" apply -n "$namespace" -f deploy/samples/redis.yaml

step "Waiting until my-op-redis is Ready"
"$kubectl" wait -n "$namespace" --for=condition=Ready redis/my-op-redis --timeout=120s

step "kubectl get redis,pods"
"$kubectl" get -n "$namespace" redis,pods -o wide

step "Events of my-op-redis"
"$kubectl" get events.events.k8s.io -n "$namespace" --field-selector regarding.name=my-op-redis \
  --sort-by=.metadata.creationTimestamp

step "An invalid Redis is refused at admission: deploy/samples/invalid/port-below-webhook-minimum.yaml"
if "$kubectl" apply -n "$namespace" -f deploy/samples/invalid/port-below-webhook-minimum.yaml; then
  echo "unexpected: the invalid sample was accepted" >&2
  exit 1
fi

step "Explore"
cat <<TXT
  export KUBECONFIG=$KUBECONFIG
  $kubectl get redis -n $namespace                      # Replicas, Ready, Image, Port, Age
  $kubectl scale redis/my-op-redis -n $namespace --replicas=4
  $kubectl delete pod my-op-redis-0 -n $namespace        # it comes back
  $kubectl explain redis.spec
  logs: .cluster/run/redis-controller.log, .cluster/run/redis-webhook.log

Stop the operator: make stop        Stop everything: make cluster-down
TXT
