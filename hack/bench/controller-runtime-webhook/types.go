package main

// The Redis resource (myapp.tangx.in/v1) as a kubebuilder project would declare it: the fields of
// crates/api/src/types.rs, with the same JSON names. Every spec field is a pointer with
// omitempty, so "absent" and "set" stay distinguishable and a decoded object marshals back to
// what was sent (controller-runtime's defaulter computes its patch from that round trip).
//
// One difference remains by design of that round trip: resource quantities in spec.resources
// are re-encoded canonically ("1024Mi" becomes "1Gi", "0.5" becomes "500m"), so for such a spec
// /mutate patches them where redis-webhook leaves them as written (same values, other bytes).
// Unknown fields are kept: controller-runtime drops the patch's removals of fields the Go type
// does not know (DefaulterRemoveUnknownOrOmitableFields is off).
//
// The deep copies are written by hand (a kubebuilder project would generate them with
// controller-gen); they are only used by the defaulter's "did anything change" check.

import (
	corev1 "k8s.io/api/core/v1"
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
	Replicas            *int32                       `json:"replicas,omitempty"`
	Image               *string                      `json:"image,omitempty"`
	Port                *int32                       `json:"port,omitempty"`
	ImagePullPolicy     *corev1.PullPolicy           `json:"imagePullPolicy,omitempty"`
	Resources           *corev1.ResourceRequirements `json:"resources,omitempty"`
	Mode                *Mode                        `json:"mode,omitempty"`
	Replication         *ReplicationSpec             `json:"replication,omitempty"`
	Auth                *AuthSpec                    `json:"auth,omitempty"`
	PodDisruptionBudget *PodDisruptionBudgetSpec     `json:"podDisruptionBudget,omitempty"`
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

// RedisStatus is written by the controller through the status subresource.
type RedisStatus struct {
	Replicas           int32              `json:"replicas"`
	ReadyReplicas      int32              `json:"readyReplicas"`
	Selector           *string            `json:"selector,omitempty"`
	ObservedGeneration *int64             `json:"observedGeneration,omitempty"`
	Conditions         []metav1.Condition `json:"conditions,omitempty"`
	Primary            *string            `json:"primary,omitempty"`
	Members            []MemberStatus     `json:"members,omitempty"`
}

// MemberStatus is one pod's part in replication.
type MemberStatus struct {
	Name string `json:"name"`
	Role string `json:"role"`
	Lag  *int64 `json:"lag,omitempty"`
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
}

func copyPtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}
