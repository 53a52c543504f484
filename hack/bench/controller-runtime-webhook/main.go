// Command controller-runtime-webhook is redis-webhook's admission rules written the way a Go
// team would with kubebuilder: sigs.k8s.io/controller-runtime's webhook server,
// admission.WithCustomDefaulter on /mutate and admission.WithCustomValidator on /validate,
// images parsed with github.com/distribution/reference. `make bench-webhook` checks that it
// answers the bench reviews exactly as redis-webhook does, then measures both (and a bare
// hyper+rustls server) under the same load.
//
// It runs without a cluster (no manager, no kubeconfig): the webhook server alone, plus a
// plain-HTTP /healthz and /readyz (the readyz check is the webhook server's StartedChecker, as
// kubebuilder's scaffold registers it) and /metrics (controller-runtime's registry, which the
// webhook server instruments).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/go-logr/logr/funcr"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	admissionv1 "k8s.io/api/admission/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "controller-runtime-webhook:", err)
		os.Exit(1)
	}
}

func run() error {
	// The flags and defaults of redis-webhook (crates/webhook/src/cli.rs).
	bind := flag.String("bind", "0.0.0.0:9443", "Address of the TLS admission endpoints (/mutate, /validate).")
	certFile := flag.String("tls-cert-file", "certs/tls.crt", "PEM certificate chain (leaf first); reloaded when it changes on disk.")
	keyFile := flag.String("tls-key-file", "certs/tls.key", "PEM private key of the certificate (same directory as the certificate).")
	metricsBind := flag.String("metrics-bind", "0.0.0.0:8080", "Plain-HTTP address of /metrics, /healthz and /readyz.")
	reserved := flag.String("reserved-names", "tangx-in", "Names a Redis may not have (comma-separated).")
	minPort := flag.Int("min-port", 6379, "Lowest spec.port accepted.")
	maxReplicas := flag.Int("max-replicas", 100, "Highest spec.replicas accepted.")
	flag.Parse()

	logf.SetLogger(funcr.New(func(prefix, args string) { fmt.Fprintln(os.Stderr, prefix, args) }, funcr.Options{}))
	policy := &Policy{ReservedNames: strings.Split(*reserved, ","), MinPort: int32(*minPort), MaxReplicas: int32(*maxReplicas)}

	host, portText, err := net.SplitHostPort(*bind)
	if err != nil {
		return fmt.Errorf("--bind: %w", err)
	}
	port, err := strconv.Atoi(portText)
	if err != nil {
		return fmt.Errorf("--bind: %w", err)
	}
	if filepath.Dir(*certFile) != filepath.Dir(*keyFile) {
		return errors.New("--tls-cert-file and --tls-key-file must be in the same directory (controller-runtime's CertDir)")
	}

	scheme := runtime.NewScheme()
	if err := addToScheme(scheme); err != nil {
		return err
	}
	if err := autoscalingv1.AddToScheme(scheme); err != nil {
		return err
	}

	server := webhook.NewServer(webhook.Options{
		Host:     host,
		Port:     port,
		CertDir:  filepath.Dir(*certFile),
		CertName: filepath.Base(*certFile),
		KeyName:  filepath.Base(*keyFile),
	})
	redisDefaulter := admission.WithCustomDefaulter(scheme, &Redis{}, defaulter{})
	redisValidator := admission.WithCustomValidator(scheme, &Redis{}, &redisValidator{policy})
	scaleValidator := admission.WithCustomValidator(scheme, &autoscalingv1.Scale{}, &scaleValidator{policy})
	server.Register("/mutate", &webhook.Admission{Handler: &route{redis: redisDefaulter.Handler, mutate: true}})
	server.Register("/validate", &webhook.Admission{Handler: &route{redis: redisValidator.Handler, scale: scaleValidator.Handler}})

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()

	mux := http.NewServeMux()
	mux.Handle("/healthz", http.StripPrefix("/healthz", &healthz.Handler{Checks: map[string]healthz.Checker{"ping": healthz.Ping}}))
	mux.Handle("/readyz", http.StripPrefix("/readyz", &healthz.Handler{Checks: map[string]healthz.Checker{"webhook": server.StartedChecker()}}))
	mux.Handle("/metrics", promhttp.HandlerFor(metrics.Registry, promhttp.HandlerOpts{}))
	listener, err := net.Listen("tcp", *metricsBind)
	if err != nil {
		return fmt.Errorf("--metrics-bind: %w", err)
	}
	go func() { _ = http.Serve(listener, mux) }()

	return server.Start(ctx)
}

// route sends a review to the handler of what it is about, as redis-webhook does: a Redis, the
// redis/scale subresource (validated: spec.replicas rules; never defaulted), or anything else
// (allowed, with a warning that the webhook configuration's rules are wrong).
type route struct {
	redis, scale admission.Handler
	mutate       bool
}

func (r *route) Handle(ctx context.Context, req admission.Request) admission.Response {
	switch {
	case req.Kind.Group == group && req.Kind.Kind == "Redis":
		if r.mutate && req.Operation != admissionv1.Create && req.Operation != admissionv1.Update {
			return admission.Allowed("")
		}
		return r.redis.Handle(ctx, req)
	case req.Resource.Group == group && req.Resource.Resource == "redis" && req.SubResource == "scale" &&
		req.Kind.Group == "autoscaling" && req.Kind.Kind == "Scale":
		if r.scale == nil || req.Operation != admissionv1.Update {
			return admission.Allowed("")
		}
		return r.scale.Handle(ctx, req)
	default:
		return admission.Allowed("").WithWarnings(fmt.Sprintf(
			"redis-webhook only judges %s/Redis and its scale subresource; it was sent %s/%s %s: check the webhook configuration's rules",
			group, req.Kind.Group, req.Kind.Version, req.Kind.Kind))
	}
}

// defaulter fills the missing defaults; controller-runtime turns the change into a JSONPatch.
type defaulter struct{}

func (defaulter) Default(_ context.Context, obj runtime.Object) error {
	redis, ok := obj.(*Redis)
	if !ok {
		return fmt.Errorf("expected a Redis, got %T", obj)
	}
	applyDefaults(&redis.Spec)
	return nil
}

type redisValidator struct{ policy *Policy }

func (v *redisValidator) ValidateCreate(ctx context.Context, obj runtime.Object) (admission.Warnings, error) {
	return decide(ctx, v.policy.ValidateCreate(obj.(*Redis)), false)
}

func (v *redisValidator) ValidateUpdate(ctx context.Context, oldObj, newObj runtime.Object) (admission.Warnings, error) {
	return decide(ctx, v.policy.ValidateUpdate(newObj.(*Redis), oldObj.(*Redis)), false)
}

func (v *redisValidator) ValidateDelete(ctx context.Context, obj runtime.Object) (admission.Warnings, error) {
	return decide(ctx, v.policy.ValidateDelete(obj.(*Redis)), true)
}

type scaleValidator struct{ policy *Policy }

func (v *scaleValidator) ValidateCreate(context.Context, runtime.Object) (admission.Warnings, error) {
	return nil, nil
}

func (v *scaleValidator) ValidateUpdate(ctx context.Context, oldObj, newObj runtime.Object) (admission.Warnings, error) {
	stored := oldObj.(*autoscalingv1.Scale).Spec.Replicas
	return decide(ctx, v.policy.ValidateScale(newObj.(*autoscalingv1.Scale).Spec.Replicas, &stored), false)
}

func (v *scaleValidator) ValidateDelete(context.Context, runtime.Object) (admission.Warnings, error) {
	return nil, nil
}

// decide turns a verdict into controller-runtime's answer: warnings, and for a denial a
// Status listing every violation with one cause per field: 422 Invalid, or 403 Forbidden for
// deletion protection (as redis-webhook answers).
func decide(ctx context.Context, verdict Verdict, forbidden bool) (admission.Warnings, error) {
	if len(verdict.Violations) == 0 {
		return verdict.Warnings, nil
	}
	name := ""
	if req, err := admission.RequestFromContext(ctx); err == nil {
		name = req.Name
	}
	code, reason, causeType := int32(http.StatusUnprocessableEntity), metav1.StatusReasonInvalid, metav1.CauseTypeFieldValueInvalid
	if forbidden {
		code, reason, causeType = http.StatusForbidden, metav1.StatusReasonForbidden, metav1.CauseType("FieldValueForbidden")
	}
	causes := make([]metav1.StatusCause, len(verdict.Violations))
	for i, v := range verdict.Violations {
		causes[i] = metav1.StatusCause{Type: causeType, Message: v.Message, Field: v.Field}
	}
	return verdict.Warnings, &apierrors.StatusError{ErrStatus: metav1.Status{
		Status:  metav1.StatusFailure,
		Message: verdict.Message(),
		Reason:  reason,
		Code:    code,
		Details: &metav1.StatusDetails{Name: name, Group: group, Kind: "Redis", Causes: causes},
	}}
}
