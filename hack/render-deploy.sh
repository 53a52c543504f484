#!/usr/bin/env bash
# render-deploy.sh [RELEASE [NAMESPACE]] [HELM_TEMPLATE_ARGS...]
#
# Prints what `make manifests` writes to deploy/redis-operator.yaml: a Namespace enforcing Pod
# Security "restricted", then the chart rendered by `helm template` (default values unless more
# arguments are given; release and namespace default to redis-operator). The e2e suite renders
# through this script too, with its own release, namespace and webhook.namespaceSelector.
#
# The default certs.mode (self-signed) generates a new CA and serving certificate on every run:
# `make manifests` keeps the committed ones when nothing else changed, and the drift test
# (crates/e2e/tests/chart.rs) compares renders with the certificate data masked.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
helm=${HELM:-${root}/bin/helm}
release=${1:-redis-operator}
namespace=${2:-redis-operator}
shift $(($# < 2 ? $# : 2))
if [[ ! -x $helm ]]; then
  echo "render-deploy.sh: no helm at ${helm} (make tools builds it)" >&2
  exit 1
fi
cat <<YAML
# Generated from charts/redis-operator by \`make manifests\` (hack/render-deploy.sh). Do not edit.
# Apply with: kubectl apply --server-side -f deploy/
apiVersion: v1
kind: Namespace
metadata:
  name: ${namespace}
  labels:
    pod-security.kubernetes.io/enforce: restricted
    pod-security.kubernetes.io/enforce-version: latest
    pod-security.kubernetes.io/audit: restricted
    pod-security.kubernetes.io/warn: restricted
YAML
"$helm" template "$release" "${root}/charts/redis-operator" --namespace "$namespace" "$@"
