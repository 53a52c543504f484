// bed-cert-manager runs cert-manager's own controllers for the test bed: the ones that turn a
// Certificate into the Secret it names, with a selfSigned or a CA Issuer (or ClusterIssuer).
//
// Why our own main: cert-manager's controller binary lives in a module of its own
// (github.com/cert-manager/cert-manager/controller-binary, cmd/controller in its repository)
// that the Go module proxy here does not serve. Its main only parses options, then builds the
// controllers that registered themselves with pkg/controller and runs them; this file does the
// same for the controllers below, with upstream's defaults for what they read (its feature
// gates untouched too: with SecretsFilteredCaching only the Secrets cert-manager labels are cached
// whole). Everything that issues, renews, stores and reports is cert-manager's code from the
// pinned module.
//
// Left out: leader election (one instance per bed), the metrics and healthz servers, ACME,
// Vault and Venafi issuers, the ingress and Gateway shims, the CertificateSigningRequest
// controllers, cert-manager's webhook (its validation, and the requester fields it fills in a
// CertificateRequest; nothing here reads them) and the cainjector (nothing fills a caBundle).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"golang.org/x/sync/errgroup"
	"k8s.io/klog/v2"

	controllerpkg "github.com/cert-manager/cert-manager/pkg/controller"
	crapprover "github.com/cert-manager/cert-manager/pkg/controller/certificaterequests/approver"
	crca "github.com/cert-manager/cert-manager/pkg/controller/certificaterequests/ca"
	crselfsigned "github.com/cert-manager/cert-manager/pkg/controller/certificaterequests/selfsigned"
	"github.com/cert-manager/cert-manager/pkg/controller/certificates/issuing"
	"github.com/cert-manager/cert-manager/pkg/controller/certificates/keymanager"
	"github.com/cert-manager/cert-manager/pkg/controller/certificates/readiness"
	"github.com/cert-manager/cert-manager/pkg/controller/certificates/requestmanager"
	"github.com/cert-manager/cert-manager/pkg/controller/certificates/revisionmanager"
	"github.com/cert-manager/cert-manager/pkg/controller/certificates/trigger"
	"github.com/cert-manager/cert-manager/pkg/controller/clusterissuers"
	"github.com/cert-manager/cert-manager/pkg/controller/issuers"
	logf "github.com/cert-manager/cert-manager/pkg/logs"

	// The issuer types the (Cluster)Issuer controllers set up and mark Ready: their init()
	// registers them with pkg/issuer.
	_ "github.com/cert-manager/cert-manager/pkg/issuer/ca"
	_ "github.com/cert-manager/cert-manager/pkg/issuer/selfsigned"
)

// The controllers to run, by the names their packages register (importing a package runs its
// init(), which registers its constructor with pkg/controller).
var controllers = []string{
	issuers.ControllerName,
	clusterissuers.ControllerName,
	// Approves every CertificateRequest, as upstream's default approver does (the check that
	// the approver may approve for an issuer is cert-manager's webhook's, not run here).
	crapprover.ControllerName,
	crca.CRControllerName,
	crselfsigned.CRControllerName,
	// The Certificate lifecycle: when to issue (trigger), the next private key (keymanager),
	// the CertificateRequest (requestmanager), the Secret (issuing), the Ready condition
	// (readiness), and pruning old requests (revisionmanager).
	trigger.ControllerName,
	keymanager.ControllerName,
	requestmanager.ControllerName,
	issuing.ControllerName,
	readiness.ControllerName,
	revisionmanager.ControllerName,
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintf(os.Stderr, "bed-cert-manager: %s\n", err)
		logf.FlushLogs()
		os.Exit(1)
	}
	logf.FlushLogs()
}

func run() error {
	klog.InitFlags(nil) // -v: cert-manager logs what it does at 2 (logf.InfoLevel)
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig of the identity to run as (required)")
	// Upstream's defaults (internal/apis/config/controller/v1alpha1/defaults.go).
	clusterResourceNamespace := flag.String("cluster-resource-namespace", "kube-system",
		"where a ClusterIssuer's Secrets are read from")
	workers := flag.Int("workers", 5, "workers per controller")
	minBackoff := flag.Duration("certificate-request-minimum-backoff", time.Hour,
		"wait after a failed issuance before the next attempt, doubling per failure")
	maxBackoff := flag.Duration("certificate-request-maximum-backoff", 32*time.Hour,
		"the longest wait after failed issuances")
	flag.Parse()
	if *kubeconfig == "" {
		return fmt.Errorf("--kubeconfig is required")
	}
	logf.InitLogs()

	signalled, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	ctx := logf.NewContext(signalled, logf.Log, "controller")

	factory, err := controllerpkg.NewContextFactory(ctx, controllerpkg.ContextOptions{
		Kubeconfig:         *kubeconfig,
		KubernetesAPIQPS:   20, // upstream's defaults; unused when the API server has APF
		KubernetesAPIBurst: 50,
		IssuerOptions: controllerpkg.IssuerOptions{
			ClusterResourceNamespace: *clusterResourceNamespace,
			// Upstream's defaults; only ACME, Vault and cloud DNS issuers read them.
			ClusterIssuerAmbientCredentials: true,
			IssuerAmbientCredentials:        false,
		},
		CertificateOptions: controllerpkg.CertificateOptions{
			CertificateRequestMinimumBackoffDuration: *minBackoff,
			CertificateRequestMaximumBackoffDuration: *maxBackoff,
		},
	})
	if err != nil {
		return err
	}

	// Each constructor registers the informers it needs with the shared factories, so the
	// factories start only after every controller is built (as upstream's Run does). One
	// controller failing stops them all, and the process exits for up.sh's log to show why.
	g, ctx := errgroup.WithContext(ctx)
	for _, name := range controllers {
		construct, ok := controllerpkg.Known()[name]
		if !ok {
			return fmt.Errorf("controller %s is not registered", name)
		}
		c, err := construct(factory)
		if err != nil {
			return fmt.Errorf("building controller %s: %w", name, err)
		}
		g.Go(func() error {
			klog.InfoS("starting controller", "controller", name)
			return c.Run(*workers, ctx)
		})
	}
	shared, err := factory.Build()
	if err != nil {
		return err
	}
	shared.SharedInformerFactory.Start(ctx.Done())
	shared.KubeSharedInformerFactory.Start(ctx.Done())
	// up.sh waits for this line: from here on Certificates are acted on.
	shared.SharedInformerFactory.WaitForCacheSync(ctx.Done())
	shared.KubeSharedInformerFactory.WaitForCacheSync(ctx.Done())
	if ctx.Err() == nil {
		klog.InfoS("all caches synced", "controllers", len(controllers))
	}

	err = g.Wait()
	shared.KubeSharedInformerFactory.Shutdown()
	shared.SharedInformerFactory.Shutdown()
	if signalled.Err() != nil {
		return nil // SIGTERM (down.sh): a controller stopped while syncing says so, harmlessly
	}
	if err == nil {
		err = fmt.Errorf("every controller stopped")
	}
	return err
}
