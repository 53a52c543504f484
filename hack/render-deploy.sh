#!/usr/bin/env bash
# render-deploy.sh [RELEASE [NAMESPACE]] [HELM_TEMPLATE_ARGS...]
#
# Prints what `make manifests` writes to deploy/redis-operator.yaml: a Namespace enforcing Pod
# Security "restricted", then the chart rendered by `helm template` with default values except
# certs.mode=cert-manager (more arguments are passed on; release and namespace default to
# redis-operator). The e2e suite renders through this script too, with its own release,
# namespace and webhook.namespaceSelector.
#
# Why cert-manager, as kubebuilder's config/default does: the chart's default (self-signed)
# generates a CA and its private key on every render, and a key committed to the repository is
# a key everyone has. With cert-manager the manifest holds no certificate at all: cert-manager
# issues the serving Secret and its cainjector fills the webhook configurations' caBundle.
# Clusters without cert-manager install with helm (`make deploy`), whose self-signed
# certificates are generated at install time and never written to the repository.
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
# Needs cert-manager (https://cert-manager.io) in the cluster. Apply with:
#   kubectl apply --server-side -f deploy/
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
"$helm" template "$release" "${root}/charts/redis-operator" --namespace "$namespace" \
  --set certs.mode=cert-manager "$@"
