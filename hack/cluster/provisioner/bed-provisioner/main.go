// bed-provisioner: the test bed's dynamic volume provisioner for the real nodes.
//
// It runs as a process on the machine that holds every real node (started by ../up.sh), so it
// creates each volume as a directory under --root/<node>/ directly, and hands it to Kubernetes as
// a `local` PersistentVolume pinned to the node the scheduler chose for the claim's first pod. The controller loop (watching claims, binding, retries,
// reclaim on delete) is sig-storage-lib-external-provisioner's, the library external
// provisioners are built on; this file only says where a volume lives.
//
// The StorageClass that names it uses volumeBindingMode WaitForFirstConsumer, so the scheduler
// picks the node first and a volume is only ever made for a real node.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
	"sigs.k8s.io/sig-storage-lib-external-provisioner/v13/controller"
)

type localDirs struct {
	root  string          // where volumes are made: <root>/<node>/<pv name>
	nodes map[string]bool // the nodes that have them
}

var _ controller.Provisioner = &localDirs{}

func (p *localDirs) Provision(_ context.Context, opts controller.ProvisionOptions) (*v1.PersistentVolume, controller.ProvisioningState, error) {
	node := opts.SelectedNodeName
	if !p.nodes[node] {
		return nil, controller.ProvisioningFinished, fmt.Errorf("volumes of this class exist only on the real nodes, not on %q (the StorageClass waits for the first consumer, so the scheduler picks the node)", node)
	}
	for _, mode := range opts.PVC.Spec.AccessModes {
		if mode != v1.ReadWriteOnce && mode != v1.ReadWriteOncePod {
			return nil, controller.ProvisioningFinished, fmt.Errorf("access mode %s is not offered (a local directory on one node: ReadWriteOnce or ReadWriteOncePod)", mode)
		}
	}
	path := filepath.Join(p.root, node, opts.PVName)
	// Group-writable only through the pod's fsGroup, which kubelet applies to local volumes.
	if err := os.MkdirAll(path, 0o755); err != nil {
		return nil, controller.ProvisioningInBackground, fmt.Errorf("creating %s: %w", path, err)
	}
	reclaim := v1.PersistentVolumeReclaimDelete
	if opts.StorageClass.ReclaimPolicy != nil {
		reclaim = *opts.StorageClass.ReclaimPolicy
	}
	pv := &v1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: opts.PVName},
		Spec: v1.PersistentVolumeSpec{
			PersistentVolumeReclaimPolicy: reclaim,
			AccessModes:                   opts.PVC.Spec.AccessModes,
			MountOptions:                  opts.StorageClass.MountOptions,
			Capacity: v1.ResourceList{
				v1.ResourceStorage: opts.PVC.Spec.Resources.Requests[v1.ResourceStorage],
			},
			PersistentVolumeSource: v1.PersistentVolumeSource{
				Local: &v1.LocalVolumeSource{Path: path},
			},
			NodeAffinity: &v1.VolumeNodeAffinity{Required: &v1.NodeSelector{
				NodeSelectorTerms: []v1.NodeSelectorTerm{{
					MatchExpressions: []v1.NodeSelectorRequirement{{
						Key:      v1.LabelHostname,
						Operator: v1.NodeSelectorOpIn,
						Values:   []string{node},
					}},
				}},
			}},
		},
	}
	return pv, controller.ProvisioningFinished, nil
}

func (p *localDirs) Delete(_ context.Context, pv *v1.PersistentVolume) error {
	if pv.Spec.Local == nil {
		return &controller.IgnoredError{Reason: "not a local volume"}
	}
	path := pv.Spec.Local.Path
	// Only ever remove what this provisioner made: a direct child of --root/<node>.
	parent := filepath.Dir(filepath.Clean(path))
	if filepath.Dir(parent) != p.root || !p.nodes[filepath.Base(parent)] {
		return &controller.IgnoredError{Reason: fmt.Sprintf("%s is not under %s/<node>", path, p.root)}
	}
	if err := os.RemoveAll(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("removing %s: %w", path, err)
	}
	return nil
}

func main() {
	klog.InitFlags(nil)
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig of the cluster")
	name := flag.String("provisioner-name", "redis-operator.dev/bed-local", "the StorageClass provisioner this process serves")
	root := flag.String("root", "", "directory the volumes are made in")
	nodeList := flag.String("nodes", "", "the nodes volumes can be on, comma-separated (their kubernetes.io/hostname labels)")
	flag.Parse()
	if *kubeconfig == "" || *root == "" || *nodeList == "" {
		fmt.Fprintln(os.Stderr, "bed-provisioner: --kubeconfig, --root and --nodes are required")
		os.Exit(2)
	}
	nodes := map[string]bool{}
	for _, node := range strings.Split(*nodeList, ",") {
		if node != "" {
			nodes[node] = true
		}
	}
	if err := os.MkdirAll(*root, 0o755); err != nil {
		klog.Fatalf("creating %s: %v", *root, err)
	}
	config, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		klog.Fatalf("reading %s: %v", *kubeconfig, err)
	}
	client, err := kubernetes.NewForConfig(config)
	if err != nil {
		klog.Fatalf("client: %v", err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	provisioner := controller.NewProvisionController(ctx, client, *name, &localDirs{root: filepath.Clean(*root), nodes: nodes},
		controller.LeaderElection(false))
	klog.Infof("serving StorageClass provisioner %s: volumes in %s/<node> on nodes %s", *name, *root, *nodeList)
	provisioner.Run(ctx)
}
