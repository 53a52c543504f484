#!/usr/bin/env bash
# make demo: the tutorial, end to end, on this machine. Builds what is missing, starts the local
# control plane with its real node, runs the operator (hack/run.sh), creates the tutorial's Redis
# on the real node, shows an invalid one being refused at admission, and ends with a real PING
# through a pod IP.
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

step "Namespace $namespace, enforcing Pod Security \"restricted\", its pods on the real node"
"$kubectl" create namespace "$namespace" --dry-run=client -o yaml | "$kubectl" apply -f - >/dev/null
"$kubectl" label namespace "$namespace" --overwrite pod-security.kubernetes.io/enforce=restricted >/dev/null
"$kubectl" annotate namespace "$namespace" --overwrite \
  scheduler.alpha.kubernetes.io/node-selector=redis-operator.dev/node=real \
  'scheduler.alpha.kubernetes.io/defaultTolerations=[{"key":"redis-operator.dev/node","operator":"Equal","value":"real","effect":"NoSchedule"}]' >/dev/null

# Nothing can be pulled here: the real node runs the Redis image the bed built from Debian's
# redis-server (hack/cluster/images.sh) in place of the sample's redis:5-alpine.
image=localhost/redis:bed
step "kubectl apply -f deploy/samples/redis.yaml (the tutorial's my-op-redis: 2 replicas, port 8333), image ${image}"
sed "s|^  image: .*|  image: ${image}|" deploy/samples/redis.yaml | "$kubectl" apply -n "$namespace" -f -

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

step "PING through each pod IP (real redis-server processes on the real node)"
for pod in my-op-redis-0 my-op-redis-1; do
  ip=$("$kubectl" get pod -n "$namespace" "$pod" -o jsonpath='{.status.podIP}')
  printf '%s (%s): ' "$pod" "$ip"
  redis-cli -h "$ip" -p 8333 PING
done

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
