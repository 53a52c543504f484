package main

// The Redis resource (myapp.tangx.in/v1) as a kubebuilder project would declare it: the fields of
// crates/api/src/types.rs (and of the feature types it holds: storage.rs, exporter.rs,
// network_policy.rs, tls.rs, acl.rs, service.rs, backup.rs, secret.rs), with the same JSON names.
// Every optional spec field is a pointer, slice or map with omitempty, so "absent" and "set" stay
// distinguishable and a decoded object marshals back to what was sent (controller-runtime's
// defaulter computes its patch from that round trip). The Kubernetes types the spec embeds
// (affinity, tolerations, topology spread constraints, NetworkPolicy peers, resources) are
// k8s.io/api's, as they are k8s-openapi's on the Rust side.
//
// Differences by design of that round trip: resource quantities in spec.resources and
// spec.exporter.resources are re-encoded canonically ("1024Mi" becomes "1Gi", "0.5" becomes
// "500m"), and a required field of an embedded Kubernetes type that is missing (say a topology
// spread constraint's maxSkew) comes back as its zero value, so for such a spec /mutate patches
// them where redis-webhook leaves them as written (same values, other bytes). The API server's
// schema requires those fields, so no review the bench sends lacks one. Unknown fields are kept:
// controller-runtime drops the patch's removals of fields the Go type does not know
// (DefaulterRemoveUnknownOrOmitableFields is off).
//
// The deep copies are written by hand (a kubebuilder project would generate them with
// controller-gen); they are only used by the defaulter's "did anything change" check.

import (
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// GroupVersion of the Redis resource.
var GroupVersion = schema.GroupVersion{Group: "myapp.tangx.in", Version: "v1"}

// Redis runs a set of Redis server pods named <name>-<ordinal>.
type Redis struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   RedisSpec   `json:"spec,omitempty"`
	Status RedisStatus `json:"status,omitzero"`
}

// RedisSpec is the desired state; every field is optional and defaulted by /mutate.
type RedisSpec struct {
	Replicas                  *int32                            `json:"replicas,omitempty"`
	Image                     *string                           `json:"image,omitempty"`
	Port                      *int32                            `json:"port,omitempty"`
	ImagePullPolicy           *corev1.PullPolicy                `json:"imagePullPolicy,omitempty"`
	Resources                 *corev1.ResourceRequirements      `json:"resources,omitempty"`
	Mode                      *Mode                             `json:"mode,omitempty"`
	Replication               *ReplicationSpec                  `json:"replication,omitempty"`
	Auth                      *AuthSpec                         `json:"auth,omitempty"`
	PodDisruptionBudget       *PodDisruptionBudgetSpec          `json:"podDisruptionBudget,omitempty"`
	Storage                   *StorageSpec                      `json:"storage,omitempty"`
	Exporter                  *ExporterSpec                     `json:"exporter,omitempty"`
	NetworkPolicy             *NetworkPolicySpec                `json:"networkPolicy,omitempty"`
	TLS                       *TLSSpec                          `json:"tls,omitempty"`
	ACL                       *ACLSpec                          `json:"acl,omitempty"`
	Config                    map[string]string                 `json:"config,omitempty"`
	MaxMemoryPercentOfLimit   *int32                            `json:"maxMemoryPercentOfLimit,omitempty"`
	Service                   *ServiceSettings                  `json:"service,omitempty"`
	NodeSelector              map[string]string                 `json:"nodeSelector,omitempty"`
	Affinity                  *corev1.Affinity                  `json:"affinity,omitempty"`
	Tolerations               []corev1.Toleration               `json:"tolerations,omitempty"`
	TopologySpreadConstraints []corev1.TopologySpreadConstraint `json:"topologySpreadConstraints,omitempty"`
	PriorityClassName         *string                           `json:"priorityClassName,omitempty"`
	PodLabels                 map[string]string                 `json:"podLabels,omitempty"`
	PodAnnotations            map[string]string                 `json:"podAnnotations,omitempty"`
	Backup                    *BackupSpec                       `json:"backup,omitempty"`
	Restore                   *RestoreSpec                      `json:"restore,omitempty"`
}

// Mode is Standalone (the default) or Replication.
type Mode string

const (
	ModeStandalone  Mode = "Standalone"
	ModeReplication Mode = "Replication"
)

// ReplicationSpec holds the settings of Replication mode.
type ReplicationSpec struct {
	MinReplicasToWrite *int32  `json:"minReplicasToWrite,omitempty"`
	MinReplicasMaxLag  *int32  `json:"minReplicasMaxLag,omitempty"`
	FailoverAfter      *string `json:"failoverAfter,omitempty"`
}

// AuthSpec says where the password comes from.
type AuthSpec struct {
	SecretRef SecretKeyRef `json:"secretRef"`
}

// SecretKeyRef is a key of a Secret in the same namespace.
type SecretKeyRef struct {
	Name string  `json:"name"`
	Key  *string `json:"key,omitempty"`
}

// PodDisruptionBudgetSpec is the PodDisruptionBudget the operator keeps.
type PodDisruptionBudgetSpec struct {
	MaxUnavailable *intstr.IntOrString `json:"maxUnavailable,omitempty"`
}

// StorageSpec is a claim per pod (spec.storage). The size stays a string: a quantity that does
// not parse is the rules' to refuse, not the decoder's.
type StorageSpec struct {
	Size             string         `json:"size"`
	StorageClassName *string        `json:"storageClassName,omitempty"`
	AccessModes      []string       `json:"accessModes,omitempty"`
	AppendOnly       *bool          `json:"appendOnly,omitempty"`
	Retention        *RetentionSpec `json:"retention,omitempty"`
}

// RetentionSpec is what happens to the claims (Retain or Delete).
type RetentionSpec struct {
	WhenDeleted *string `json:"whenDeleted,omitempty"`
	WhenScaled  *string `json:"whenScaled,omitempty"`
}

// ExporterSpec is the metrics sidecar (spec.exporter).
type ExporterSpec struct {
	Enabled   *bool                        `json:"enabled,omitempty"`
	Image     *string                      `json:"image,omitempty"`
	Port      *int32                       `json:"port,omitempty"`
	Resources *corev1.ResourceRequirements `json:"resources,omitempty"`
}

// NetworkPolicySpec is who may reach the pods (spec.networkPolicy).
type NetworkPolicySpec struct {
	Enabled        *bool                            `json:"enabled,omitempty"`
	AllowedClients []networkingv1.NetworkPolicyPeer `json:"allowedClients,omitempty"`
	MetricsFrom    []networkingv1.NetworkPolicyPeer `json:"metricsFrom,omitempty"`
}

// TLSSpec is TLS on spec.port (spec.tls).
type TLSSpec struct {
	SecretRef     TLSSecretRef `json:"secretRef"`
	ClientAuth    *string      `json:"clientAuth,omitempty"`
	PlaintextPort *int32       `json:"plaintextPort,omitempty"`
}

// TLSSecretRef names the Secret of spec.tls.
type TLSSecretRef struct {
	Name string `json:"name"`
}

// ACLSpec is the ACL users (spec.acl).
type ACLSpec struct {
	DefaultUser *string   `json:"defaultUser,omitempty"`
	Users       []ACLUser `json:"users,omitempty"`
}

// ACLUser is one ACL user.
type ACLUser struct {
	Name              string       `json:"name"`
	Rules             string       `json:"rules"`
	PasswordSecretRef SecretKeyRef `json:"passwordSecretRef"`
}

// ServiceSettings is the client Service's settings (spec.service).
type ServiceSettings struct {
	Type                     *string           `json:"type,omitempty"`
	Annotations              map[string]string `json:"annotations,omitempty"`
	LoadBalancerSourceRanges []string          `json:"loadBalancerSourceRanges,omitempty"`
	ExternalTrafficPolicy    *string           `json:"externalTrafficPolicy,omitempty"`
	PerPod                   *bool             `json:"perPod,omitempty"`
}

// BackupSpec is the scheduled backups' destination (spec.backup).
type BackupSpec struct {
	Destination BackupDestination `json:"destination"`
	Schedule    *string           `json:"schedule,omitempty"`
	Keep        *int32            `json:"keep,omitempty"`
}

// BackupDestination is where backups go.
type BackupDestination struct {
	S3 S3Destination `json:"s3"`
}

// S3Destination is an S3 bucket and its credentials.
type S3Destination struct {
	Endpoint             string               `json:"endpoint"`
	Bucket               string               `json:"bucket"`
	Prefix               *string              `json:"prefix,omitempty"`
	Region               *string              `json:"region,omitempty"`
	CredentialsSecretRef CredentialsSecretRef `json:"credentialsSecretRef"`
	ForcePathStyle       *bool                `json:"forcePathStyle,omitempty"`
}

// CredentialsSecretRef names the Secret of the S3 keys.
type CredentialsSecretRef struct {
	Name string `json:"name"`
}

// RestoreSpec is the data a new Redis's pods start with (spec.restore).
type RestoreSpec struct {
	BackupName *string `json:"backupName,omitempty"`
	Location   *string `json:"location,omitempty"`
}

// RedisStatus is written by the controller through the status subresource.
type RedisStatus struct {
	Replicas             int32                 `json:"replicas"`
	ReadyReplicas        int32                 `json:"readyReplicas"`
	Selector             *string               `json:"selector,omitempty"`
	ObservedGeneration   *int64                `json:"observedGeneration,omitempty"`
	Conditions           []metav1.Condition    `json:"conditions,omitempty"`
	Primary              *string               `json:"primary,omitempty"`
	Members              []MemberStatus        `json:"members,omitempty"`
	PodConfigGenerations []PodConfigGeneration `json:"podConfigGenerations,omitempty"`
}

// MemberStatus is one pod's part in replication.
type MemberStatus struct {
	Name string `json:"name"`
	Role string `json:"role"`
	Lag  *int64 `json:"lag,omitempty"`
}

// PodConfigGeneration is the generation of spec.config a pod runs.
type PodConfigGeneration struct {
	Name       string `json:"name"`
	Generation *int64 `json:"generation,omitempty"`
}

// addToScheme registers Redis (and the autoscaling/v1 Scale of its scale subresource, see
// main.go) with a scheme.
func addToScheme(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion, &Redis{})
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}

// DeepCopyObject implements runtime.Object.
func (in *Redis) DeepCopyObject() runtime.Object {
	if in == nil {
		return nil
	}
	out := new(Redis)
	out.TypeMeta = in.TypeMeta
	in.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	in.Spec.deepCopyInto(&out.Spec)
	in.Status.deepCopyInto(&out.Status)
	return out
}

func (in *RedisSpec) deepCopyInto(out *RedisSpec) {
	*out = *in
	out.Replicas = copyPtr(in.Replicas)
	out.Image = copyPtr(in.Image)
	out.Port = copyPtr(in.Port)
	out.ImagePullPolicy = copyPtr(in.ImagePullPolicy)
	if in.Resources != nil {
		out.Resources = in.Resources.DeepCopy()
	}
	out.Mode = copyPtr(in.Mode)
	if in.Replication != nil {
		r := *in.Replication
		r.MinReplicasToWrite = copyPtr(r.MinReplicasToWrite)
		r.MinReplicasMaxLag = copyPtr(r.MinReplicasMaxLag)
		r.FailoverAfter = copyPtr(r.FailoverAfter)
		out.Replication = &r
	}
	if in.Auth != nil {
		a := *in.Auth
		a.SecretRef.Key = copyPtr(a.SecretRef.Key)
		out.Auth = &a
	}
	if in.PodDisruptionBudget != nil {
		p := *in.PodDisruptionBudget
		p.MaxUnavailable = copyPtr(p.MaxUnavailable)
		out.PodDisruptionBudget = &p
	}
	if in.Storage != nil {
		s := *in.Storage
		s.StorageClassName = copyPtr(s.StorageClassName)
		s.AccessModes = copySlice(s.AccessModes)
		s.AppendOnly = copyPtr(s.AppendOnly)
		if s.Retention != nil {
			r := *s.Retention
			r.WhenDeleted = copyPtr(r.WhenDeleted)
			r.WhenScaled = copyPtr(r.WhenScaled)
			s.Retention = &r
		}
		out.Storage = &s
	}
	if in.Exporter != nil {
		e := *in.Exporter
		e.Enabled = copyPtr(e.Enabled)
		e.Image = copyPtr(e.Image)
		e.Port = copyPtr(e.Port)
		if e.Resources != nil {
			e.Resources = e.Resources.DeepCopy()
		}
		out.Exporter = &e
	}
	if in.NetworkPolicy != nil {
		n := *in.NetworkPolicy
		n.Enabled = copyPtr(n.Enabled)
		n.AllowedClients = copyPeers(n.AllowedClients)
		n.MetricsFrom = copyPeers(n.MetricsFrom)
		out.NetworkPolicy = &n
	}
	if in.TLS != nil {
		t := *in.TLS
		t.ClientAuth = copyPtr(t.ClientAuth)
		t.PlaintextPort = copyPtr(t.PlaintextPort)
		out.TLS = &t
	}
	if in.ACL != nil {
		a := *in.ACL
		a.DefaultUser = copyPtr(a.DefaultUser)
		if a.Users != nil {
			a.Users = make([]ACLUser, len(in.ACL.Users))
			for i, u := range in.ACL.Users {
				u.PasswordSecretRef.Key = copyPtr(u.PasswordSecretRef.Key)
				a.Users[i] = u
			}
		}
		out.ACL = &a
	}
	out.Config = copyMap(in.Config)
	out.MaxMemoryPercentOfLimit = copyPtr(in.MaxMemoryPercentOfLimit)
	if in.Service != nil {
		s := *in.Service
		s.Type = copyPtr(s.Type)
		s.Annotations = copyMap(s.Annotations)
		s.LoadBalancerSourceRanges = copySlice(s.LoadBalancerSourceRanges)
		s.ExternalTrafficPolicy = copyPtr(s.ExternalTrafficPolicy)
		s.PerPod = copyPtr(s.PerPod)
		out.Service = &s
	}
	out.NodeSelector = copyMap(in.NodeSelector)
	if in.Affinity != nil {
		out.Affinity = in.Affinity.DeepCopy()
	}
	if in.Tolerations != nil {
		out.Tolerations = make([]corev1.Toleration, len(in.Tolerations))
		for i := range in.Tolerations {
			in.Tolerations[i].DeepCopyInto(&out.Tolerations[i])
		}
	}
	if in.TopologySpreadConstraints != nil {
		out.TopologySpreadConstraints = make([]corev1.TopologySpreadConstraint, len(in.TopologySpreadConstraints))
		for i := range in.TopologySpreadConstraints {
			in.TopologySpreadConstraints[i].DeepCopyInto(&out.TopologySpreadConstraints[i])
		}
	}
	out.PriorityClassName = copyPtr(in.PriorityClassName)
	out.PodLabels = copyMap(in.PodLabels)
	out.PodAnnotations = copyMap(in.PodAnnotations)
	if in.Backup != nil {
		b := *in.Backup
		b.Destination.S3.Prefix = copyPtr(b.Destination.S3.Prefix)
		b.Destination.S3.Region = copyPtr(b.Destination.S3.Region)
		b.Destination.S3.ForcePathStyle = copyPtr(b.Destination.S3.ForcePathStyle)
		b.Schedule = copyPtr(b.Schedule)
		b.Keep = copyPtr(b.Keep)
		out.Backup = &b
	}
	if in.Restore != nil {
		r := *in.Restore
		r.BackupName = copyPtr(r.BackupName)
		r.Location = copyPtr(r.Location)
		out.Restore = &r
	}
}

func (in *RedisStatus) deepCopyInto(out *RedisStatus) {
	*out = *in
	out.Selector = copyPtr(in.Selector)
	out.ObservedGeneration = copyPtr(in.ObservedGeneration)
	out.Primary = copyPtr(in.Primary)
	if in.Conditions != nil {
		out.Conditions = make([]metav1.Condition, len(in.Conditions))
		for i := range in.Conditions {
			in.Conditions[i].DeepCopyInto(&out.Conditions[i])
		}
	}
	if in.Members != nil {
		out.Members = make([]MemberStatus, len(in.Members))
		for i, m := range in.Members {
			m.Lag = copyPtr(m.Lag)
			out.Members[i] = m
		}
	}
	if in.PodConfigGenerations != nil {
		out.PodConfigGenerations = make([]PodConfigGeneration, len(in.PodConfigGenerations))
		for i, g := range in.PodConfigGenerations {
			g.Generation = copyPtr(g.Generation)
			out.PodConfigGenerations[i] = g
		}
	}
}

func copyPeers(in []networkingv1.NetworkPolicyPeer) []networkingv1.NetworkPolicyPeer {
	if in == nil {
		return nil
	}
	out := make([]networkingv1.NetworkPolicyPeer, len(in))
	for i := range in {
		in[i].DeepCopyInto(&out[i])
	}
	return out
}

func copyPtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

func copySlice[T any](in []T) []T {
	if in == nil {
		return nil
	}
	return append(make([]T, 0, len(in)), in...)
}

func copyMap(in map[string]string) map[string]string {
	if in == nil {
		return nil
	}
	out := make(map[string]string, len(in))
	for k, v := range in {
		out[k] = v
	}
	return out
}
