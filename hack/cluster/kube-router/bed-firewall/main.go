// bed-firewall runs kube-router's network policy controller (its firewall, nothing else) for
// every real node of the test bed at once.
//
// The bed's real nodes share the host's network namespace, so their pods' traffic crosses one
// set of iptables chains. kube-router enforces policies only for the pods whose status.hostIP is
// its node's IP, and each instance deletes the pod chains it did not create: one instance per
// node would delete each other's rules. So one instance runs, as the first node (its flag
// --hostname-override), and sees every pod on a node of --bed-nodes as running there: the pod
// informer rewrites their hostIP to that node's IP before the controller reads them. Nothing
// else of kube-router's controller changes. It takes kube-router's own flags.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"

	"github.com/cloudnativelabs/kube-router/v2/pkg/controllers/netpol"
	"github.com/cloudnativelabs/kube-router/v2/pkg/healthcheck"
	"github.com/cloudnativelabs/kube-router/v2/pkg/options"
	"github.com/spf13/pflag"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintf(os.Stderr, "bed-firewall: %s\n", err)
		os.Exit(1)
	}
}

func run() error {
	klog.InitFlags(nil)
	config := options.NewKubeRouterConfig()
	config.AddFlags(pflag.CommandLine)
	bedNodes := pflag.String("bed-nodes", "", "comma-separated nodes whose pods count as --hostname-override's")
	pflag.Parse()
	if err := flag.Set("v", config.VLevel); err != nil {
		return err
	}
	if config.Kubeconfig == "" || config.HostnameOverride == "" || *bedNodes == "" {
		return fmt.Errorf("--kubeconfig, --hostname-override and --bed-nodes are required")
	}
	nodes := map[string]bool{}
	for _, n := range strings.Split(*bedNodes, ",") {
		nodes[strings.TrimSpace(n)] = true
	}

	restConfig, err := clientcmd.BuildConfigFromFlags(config.Master, config.Kubeconfig)
	if err != nil {
		return err
	}
	client, err := kubernetes.NewForConfig(restConfig)
	if err != nil {
		return err
	}
	self, err := client.CoreV1().Nodes().Get(context.Background(), config.HostnameOverride, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("reading node %s: %w", config.HostnameOverride, err)
	}
	selfIP := ""
	for _, a := range self.Status.Addresses {
		if a.Type == v1.NodeInternalIP && !strings.Contains(a.Address, ":") {
			selfIP = a.Address
			break
		}
	}
	if selfIP == "" {
		return fmt.Errorf("node %s has no IPv4 InternalIP", config.HostnameOverride)
	}

	stop := make(chan struct{})
	factory := informers.NewSharedInformerFactory(client, 0)
	pods := factory.Core().V1().Pods().Informer()
	if err := pods.SetTransform(func(obj interface{}) (interface{}, error) {
		if pod, ok := obj.(*v1.Pod); ok && nodes[pod.Spec.NodeName] && pod.Status.HostIP != "" {
			pod.Status.HostIP = selfIP
			pod.Status.HostIPs = []v1.HostIP{{IP: selfIP}}
		}
		return obj, nil
	}); err != nil {
		return err
	}
	namespaces := factory.Core().V1().Namespaces().Informer()
	policies := factory.Networking().V1().NetworkPolicies().Informer()
	factory.Start(stop)
	for kind, synced := range factory.WaitForCacheSync(stop) {
		if !synced {
			return fmt.Errorf("cache of %v not synced", kind)
		}
	}

	var ipsetMutex sync.Mutex
	iptables, ipsets, err := netpol.NewIPTablesHandlers(config)
	if err != nil {
		return err
	}
	npc, err := netpol.NewNetworkPolicyController(client, config, pods, policies, namespaces,
		&ipsetMutex, iptables, ipsets)
	if err != nil {
		return err
	}
	for informer, handler := range map[cache.SharedIndexInformer]cache.ResourceEventHandler{
		pods: npc.PodEventHandler, namespaces: npc.NamespaceEventHandler, policies: npc.NetworkPolicyEventHandler,
	} {
		if _, err := informer.AddEventHandler(handler); err != nil {
			return err
		}
	}

	// Nothing watches the controller's heartbeats here: drain them.
	health := make(chan *healthcheck.ControllerHeartbeat, 10)
	go func() {
		for range health {
		}
	}()
	var wg sync.WaitGroup
	wg.Add(1)
	go npc.Run(health, stop, &wg)
	klog.Infof("bed-firewall: enforcing NetworkPolicies for the pods of %s as %s (%s)", *bedNodes,
		config.HostnameOverride, selfIP)

	signals := make(chan os.Signal, 1)
	signal.Notify(signals, syscall.SIGTERM, syscall.SIGINT)
	<-signals
	close(stop)
	wg.Wait()
	return nil
}
