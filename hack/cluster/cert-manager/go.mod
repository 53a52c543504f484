// Not built: the e2e suite takes cert-manager's CustomResourceDefinitions (Issuer, Certificate)
// from this module's deploy/crds/, to apply deploy/redis-operator.yaml (certs.mode=cert-manager)
// on the test bed. hack/cluster/build.sh fetches it through the Go module proxy, checked against
// go.sum.
module redis-operator/hack/cluster/cert-manager

go 1.26

require github.com/cert-manager/cert-manager v1.21.2
