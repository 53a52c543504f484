#!/usr/bin/env python3
"""AdmissionReviews for `make bench-webhook`, and the check that two webhooks answer them alike.

  reviews.py write DIR
      DIR/validate.json     CREATE of the tutorial's my-op-redis (nothing to default, no warning)
      DIR/mutate.json       CREATE with an empty spec (four defaults to add)
      DIR/update.json       UPDATE as kube-apiserver sends it for `kubectl apply` scaling a
                            Replication-mode Redis from 3 to 5 (~6 KiB: object and oldObject with
                            managedFields of kubectl, the controller and `kubectl scale`, labels,
                            a last-applied-configuration, status); sent to /validate and /mutate
      DIR/check/*.json      more reviews covering every rule family of crates/api/src/validation/
                            (metadata, image, replicas, port, replication, auth, PDB, storage,
                            exporter, networkPolicy, tls, acl, config, service and the name its
                            Services take, placement, backup, restore): denials, warnings, the
                            update ratchet and the rules on changes, DELETE protection,
                            redis/scale, defaults of nested fields (spec.backup.keep among them)

  What the Go copy does not mirror, so no review sends it: croner's own words for a malformed
  field of a five-field spec.backup.schedule (empty schedules, wrong field counts and macros are
  sent and answered alike); objects that do not decode into the Rust types (an unknown enum word,
  a missing required field such as an ACL user's rules); resource quantities not in canonical
  form where /mutate patches (controller-runtime re-encodes them, see types.go); and Kubernetes
  types missing a field the API server's schema requires (the Go round trip adds its zero value).

  reviews.py check DIR CA_FILE REFERENCE_URL OTHER_URL
      POSTs every review of DIR (bench and check) to /validate and /mutate of both servers and
      fails unless OTHER answers each exactly as REFERENCE does: same uid, allowed, warnings;
      for a denial the same status code, reason, message and causes; and the object with each
      answer's JSONPatch applied is the same object (decoded, so patch bytes and op order may
      differ).
"""

import copy
import http.client
import json
import os
import ssl
import sys
import urllib.parse

GROUP = "myapp.tangx.in"


def review(operation, obj, old=None, *, name=None, kind=None, resource=None, sub_resource=None,
           namespace="default", uid=None, user=None):
    name = name if name is not None else ((obj or old or {}).get("metadata", {}).get("name", ""))
    kind = kind or {"group": GROUP, "version": "v1", "kind": "Redis"}
    resource = resource or {"group": GROUP, "version": "v1", "resource": "redis"}
    options_kind = {"CREATE": "CreateOptions", "UPDATE": "UpdateOptions", "DELETE": "DeleteOptions"}[operation]
    request = {
        "uid": uid or f"bench-{operation.lower()}-{name or 'generated'}",
        "kind": kind,
        "resource": resource,
        "requestKind": kind,
        "requestResource": resource,
        "name": name,
        "namespace": namespace,
        "operation": operation,
        "userInfo": user or {"username": "bench", "groups": ["system:authenticated"]},
        "object": obj,
        "oldObject": old,
        "dryRun": False,
        "options": {"apiVersion": "meta.k8s.io/v1", "kind": options_kind},
    }
    if sub_resource:
        request["subResource"] = sub_resource
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request}


def redis(name, spec, **metadata):
    meta = {"name": name, "namespace": "default", **metadata}
    obj = {"apiVersion": f"{GROUP}/v1", "kind": "Redis", "metadata": meta}
    if spec is not None:
        obj["spec"] = spec
    return obj


def fields(paths):
    """A managedFields fieldsV1 tree from dotted paths ("f:spec.f:replicas")."""
    tree = {}
    for path in paths:
        here = tree
        for part in path.split("|"):
            here = here.setdefault(part, {})
    def dot(node, top=False):
        marker = {".": {}} if node and not top else {}
        return {k: dot(v) for k, v in node.items()} | marker
    return {k: dot(v, top=(k == "f:metadata")) for k, v in tree.items()}


def update_review():
    """`kubectl apply` of a Redis in Replication mode, replicas 3 -> 5, as kube-apiserver sends it."""
    applied_spec = {
        "replicas": 5, "image": "redis:7.2.5-alpine", "port": 6379, "mode": "Replication",
        "replication": {"failoverAfter": "15s"},
        "auth": {"secretRef": {"name": "cache-auth"}},
        "resources": {"requests": {"memory": "256Mi"}},
    }
    labels = {
        "app.kubernetes.io/name": "redis", "app.kubernetes.io/instance": "cache",
        "team": "payments",
    }

    def last_applied(spec):
        return json.dumps({
            "apiVersion": f"{GROUP}/v1", "kind": "Redis",
            "metadata": {"annotations": {"myapp.tangx.in/deletion-protection": "true"},
                         "labels": labels, "name": "cache", "namespace": "shop"},
            "spec": spec,
        }, separators=(",", ":"), sort_keys=True) + "\n"

    kubectl_fields = fields([
        "f:metadata|f:annotations|f:kubectl.kubernetes.io/last-applied-configuration",
        "f:metadata|f:annotations|f:myapp.tangx.in/deletion-protection",
        *[f"f:metadata|f:labels|f:{k}" for k in labels],
        "f:spec|f:auth|f:secretRef|f:name",
        "f:spec|f:image", "f:spec|f:mode", "f:spec|f:port", "f:spec|f:replicas",
        "f:spec|f:replication|f:failoverAfter",
        "f:spec|f:resources|f:requests|f:memory",
    ])
    controller_fields = fields(["f:metadata|f:finalizers|v:\"myapp.tangx.in/cleanup\""])
    status_fields = fields([
        *[f"f:status|f:conditions|k:{{\"type\":\"{t}\"}}|f:{f}"
          for t in ("Ready", "Replicating")
          for f in ("lastTransitionTime", "message", "reason", "status", "type")],
        "f:status|f:observedGeneration", "f:status|f:primary", "f:status|f:readyReplicas",
        "f:status|f:replicas", "f:status|f:selector",
    ])

    def obj(replicas, generation, resource_version, applied_at):
        spec = copy.deepcopy(applied_spec) | {"replicas": replicas}
        stored_spec = spec | {
            "imagePullPolicy": "IfNotPresent",
            "replication": {"minReplicasMaxLag": 10, "failoverAfter": "15s"},
            "auth": {"secretRef": {"name": "cache-auth", "key": "password"}},
            "podDisruptionBudget": {"maxUnavailable": 1},
        }
        return {
            "apiVersion": f"{GROUP}/v1", "kind": "Redis",
            "metadata": {
                "name": "cache", "namespace": "shop", "uid": "6f1c2b7e-8d4a-4e3b-9a51-0c2d7e9f4b18",
                "resourceVersion": resource_version, "generation": generation,
                "creationTimestamp": "2026-11-20T09:14:07Z",
                "labels": labels,
                "annotations": {
                    "kubectl.kubernetes.io/last-applied-configuration": last_applied(spec),
                    "myapp.tangx.in/deletion-protection": "true",
                },
                "finalizers": ["myapp.tangx.in/cleanup"],
                "managedFields": [
                    {"manager": "kubectl-client-side-apply", "operation": "Update", "apiVersion": f"{GROUP}/v1",
                     "time": applied_at, "fieldsType": "FieldsV1", "fieldsV1": kubectl_fields},
                    {"manager": "redis-controller", "operation": "Update", "apiVersion": f"{GROUP}/v1",
                     "time": "2026-11-20T09:14:08Z", "fieldsType": "FieldsV1", "fieldsV1": controller_fields},
                    {"manager": "redis-controller", "operation": "Update", "apiVersion": f"{GROUP}/v1",
                     "time": "2026-12-03T08:02:41Z", "fieldsType": "FieldsV1", "fieldsV1": status_fields,
                     "subresource": "status"},
                ],
            },
            "spec": stored_spec,
            "status": {
                "replicas": 3, "readyReplicas": 3,
                "selector": "app.kubernetes.io/instance=cache,app.kubernetes.io/managed-by=redis-operator,app.kubernetes.io/name=redis",
                "observedGeneration": 3,
                "conditions": [
                    {"type": "Ready", "status": "True", "observedGeneration": 3,
                     "lastTransitionTime": "2026-11-20T09:14:52Z", "reason": "AllPodsReady",
                     "message": "3 of 3 pods are Ready"},
                    {"type": "Replicating", "status": "True", "observedGeneration": 3,
                     "lastTransitionTime": "2026-11-20T09:15:03Z", "reason": "ReplicasInSync",
                     "message": "2 of 2 replicas in sync"},
                ],
                "primary": "cache-0",
            },
        }

    new = obj(5, 4, "48213", "2026-12-03T10:21:35Z")
    old = obj(3, 3, "48177", "2026-11-20T09:14:07Z")
    user = {"username": "alice@example.com", "uid": "a1b2c3", "groups": ["platform-admins", "system:authenticated"],
            "extra": {"authentication.kubernetes.io/credential-id": ["X509SHA256=6f0a4c1b"]}}
    return review("UPDATE", new, old, namespace="shop", uid="8b1e4f7a-2c3d-4e5f-9a0b-1c2d3e4f5a6b", user=user)


def check_reviews():
    """Reviews covering every rule, named for what they exercise."""
    out = {}
    create = lambda name, spec, **meta: review("CREATE", redis(name, spec, **meta))
    out["create-no-spec"] = create("r", None)
    out["create-null-spec"] = review("CREATE", redis("r", None) | {"spec": None})
    # Fields this webhook does not know (a newer CRD): kept, never removed by the patch.
    out["create-unknown-fields"] = create("r", {"replicas": 2, "persistence": {"size": "1Gi", "storageClassName": None},
                                                "exporter": {"enabled": True}}, labels={"team": "a"})
    out["create-null-port"] = create("r", {"port": None, "replicas": 3})
    out["create-reserved"] = create("tangx-in", {})
    out["create-low-port"] = create("r", {"port": 6000})
    out["create-every-violation"] = create("tangx-in", {"replicas": 500, "image": "Bad Image", "port": 6000})
    for i, image in enumerate(["redis", "redis:latest", "Redis:7", "redis::7", "redis:", "redis@sha256:abc", "",
                               "localhost:5000/team/redis:1.0",
                               "ghcr.io/acme/redis@sha256:" + "0123456789abcdef" * 4]):
        out[f"create-image-{i}"] = create("r", {"image": image})
    for n in (0, -1, 100, 101):
        out[f"create-replicas-{n}"] = create("r", {"replicas": n})
    out["create-long-name"] = create("a" * 64, {})
    out["create-generate-name-ok"] = review("CREATE", redis("", {}, generateName="g" * 58), name="")
    out["create-generate-name-long"] = review("CREATE", redis("", {}, generateName="g" * 59), name="")
    out["create-replication-bare"] = create("r", {"mode": "Replication"})
    out["create-replication-one"] = create("r", {"mode": "Replication", "replicas": 1, "auth": {"secretRef": {"name": "s"}}})
    out["create-replication-zero"] = create("r", {"mode": "Replication", "replicas": 0})
    out["create-replication-partial"] = create("r", {"mode": "Replication", "replicas": 3,
                                                     "replication": {"minReplicasMaxLag": 3, "minReplicasToWrite": 3}})
    out["create-replication-two"] = create("r", {"mode": "Replication", "replicas": 2, "auth": {"secretRef": {"name": "s"}}})
    out["create-replication-stored-zero"] = create("r", {"mode": "Replication", "replicas": 3, "auth": {"secretRef": {"name": "s"}},
                                                         "replication": {"minReplicasToWrite": 0}})
    out["create-replication-bad-counts"] = create("r", {"mode": "Replication", "replicas": 3,
                                                        "replication": {"minReplicasToWrite": -1, "minReplicasMaxLag": 0}})
    for i, d in enumerate(["1m30s", "500ms 1s", "1h", "60m", "1.5s", " 2 min ", "999ms", "0s", "1h1s", "soon", "10", "",
                           "99999999999999999999s", "1.5h"]):
        out[f"create-failover-{i}"] = create("r", {"mode": "Replication", "replicas": 3, "auth": {"secretRef": {"name": "s"}},
                                                   "replication": {"failoverAfter": d}})
    out["create-standalone-replication"] = create("r", {"replication": {"failoverAfter": "30s"}})
    for i, (name, key) in enumerate([("s", None), ("Bad", None), ("a..b", "pw"), ("ok", "..x"), ("ok", "a b"), ("-s", "")]):
        ref = {"name": name} | ({"key": key} if key is not None else {})
        out[f"create-auth-{i}"] = create("r", {"auth": {"secretRef": ref}})
    for i, m in enumerate([0, 1, -1, "25%", "100%", "150%", "5", "x%"]):
        out[f"create-pdb-{i}"] = create("r", {"podDisruptionBudget": {"maxUnavailable": m}})
    full = {"replicas": 2, "image": "redis:7.2-alpine", "port": 6000, "imagePullPolicy": "IfNotPresent"}
    out["update-ratchet-same"] = review("UPDATE", redis("r", full), redis("r", full))
    out["update-ratchet-changed"] = review("UPDATE", redis("r", full | {"port": 5000}), redis("r", full))
    out["update-ratchet-default"] = review("UPDATE", redis("r", {"replicas": 1, "port": 6379}), redis("r", {"replicas": 1}))
    out["delete-protected"] = review("DELETE", None, redis("r", full, annotations={"myapp.tangx.in/deletion-protection": " TRUE "}))
    out["delete-unprotected"] = review("DELETE", None, redis("tangx-in", {"port": 1000}))
    scale_kind = {"group": "autoscaling", "version": "v1", "kind": "Scale"}
    scale = lambda n: {"apiVersion": "autoscaling/v1", "kind": "Scale",
                       "metadata": {"name": "r", "namespace": "default"}, "spec": {"replicas": n}, "status": {"replicas": 1}}
    for n, old in [(5, 1), (200, 1), (200, 200), (0, 1)]:
        out[f"scale-{n}-from-{old}"] = review("UPDATE", scale(n), scale(old), kind=scale_kind, sub_resource="scale")
    out.update(feature_reviews(create))
    out["other-kind"] = review("CREATE", {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}},
                               kind={"group": "", "version": "v1", "kind": "Pod"},
                               resource={"group": "", "version": "v1", "resource": "pods"})
    return out


def feature_reviews(create):
    """Reviews covering the rules of every feature field: storage, exporter, networkPolicy, tls,
    acl, config, service, placement, backup and restore (creates, and updates where a rule or a
    warning is about the change)."""
    out = {}
    update = lambda name, new, old, **meta: review("UPDATE", redis(name, new, **meta), redis(name, old, **meta))
    repl = {"mode": "Replication", "replicas": 3, "auth": {"secretRef": {"name": "s"}}}
    limits = {"limits": {"memory": "1Gi"}}
    # spec.storage
    out["create-storage-ok"] = create("r", {"storage": {"size": "1Gi", "storageClassName": "fast", "appendOnly": True,
                                                        "retention": {"whenDeleted": "Delete", "whenScaled": "Retain"}}})
    for i, size in enumerate(["0", "lots", "1.5Gi", "+64Mi", "1500m", "1e3", "2k", "", "1Zi", "0.0"]):
        out[f"create-storage-size-{i}"] = create("r", {"storage": {"size": size}})
    out["create-storage-modes"] = create("r", {"storage": {"size": "1Gi", "accessModes": ["ReadWriteMany", "ReadWriteOncePod", "x\ny"]}})
    out["create-storage-empty-modes"] = create("r", {"storage": {"size": "1Gi", "accessModes": []}})
    out["update-storage-shrink"] = update("r", {"storage": {"size": "1Gi", "storageClassName": "slow", "accessModes": ["ReadWriteOncePod"]}},
                                          {"storage": {"size": "2Gi", "storageClassName": "fast"}})
    out["update-storage-grow"] = update("r", {"storage": {"size": "3Gi"}}, {"storage": {"size": "2Gi"}})
    out["update-storage-class-set"] = update("r", {"storage": {"size": "1Gi", "storageClassName": "fast"}}, {"storage": {"size": "1Gi"}})
    out["update-storage-added"] = update("r", {"storage": {"size": "1Gi"}}, {})
    out["update-storage-removed"] = update("r", {}, {"storage": {"size": "1Gi"}})
    # spec.exporter
    out["create-exporter-on"] = create("r", {"exporter": {}})
    out["create-exporter-bad"] = create("r", {"exporter": {"image": "Bad Image", "port": 6379}})
    out["create-exporter-off-bad"] = create("r", {"exporter": {"enabled": False, "image": "", "port": 70000}})
    out["create-exporter-latest"] = create("r", {"exporter": {"image": "oliver006/redis_exporter", "port": 9500}})
    # spec.networkPolicy
    peers_bad = [
        {},
        {"ipBlock": {"cidr": "10.0.0.0/8"}, "podSelector": {}},
        {"podSelector": {"matchLabels": {"app": "web", "bad key!": "x", "tier": "-front"},
                         "matchExpressions": [{"key": "env", "operator": "In"},
                                              {"key": "env", "operator": "Exists", "values": ["a"]},
                                              {"key": "env", "operator": "Near", "values": ["b"]},
                                              {"key": "env", "operator": "NotIn", "values": ["ok", "not ok"]}]}},
        {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "shop"}}},
        {"ipBlock": {"cidr": "10.0.0.0/33"}},
        {"ipBlock": {"cidr": "10.0.0.0/8", "except": ["10.1.0.0/16", "11.0.0.0/16", "10.0.0.0/8", "bad", "fd00::/64"]}},
        {"ipBlock": {"cidr": "fd00::/16", "except": ["fd00:1::/32", "10.0.0.0/8x"]}},
        {"ipBlock": {"cidr": " 10.0.0.0/8"}},
        {"ipBlock": {"cidr": "10.0.0.0/+8"}},
    ]
    out["create-netpol-empty"] = create("r", {"networkPolicy": {}})
    out["create-netpol-disabled"] = create("r", {"networkPolicy": {"enabled": False, "allowedClients": [{}]}})
    out["create-netpol-peers"] = create("r", {"networkPolicy": {"allowedClients": peers_bad, "metricsFrom": [{"podSelector": {}}]}})
    out["create-netpol-exporter-no-metrics"] = create("r", {"exporter": {}, "auth": {"secretRef": {"name": "s"}},
                                                            "networkPolicy": {"allowedClients": [{"podSelector": {"matchLabels": {"app": "web"}}}]}})
    out["create-netpol-too-many"] = create("r", {"networkPolicy": {"allowedClients": [{"podSelector": {}}] * 33}})
    out["create-auth-no-netpol"] = create("r", {"auth": {"secretRef": {"name": "s"}}})
    # spec.tls
    out["create-tls-ok"] = create("r", {"tls": {"secretRef": {"name": "cache-tls"}, "clientAuth": "Required"}})
    out["create-tls-plaintext"] = create("r", {"tls": {"secretRef": {"name": "cache-tls"}, "plaintextPort": 6380}, "auth": {"secretRef": {"name": "s"}}})
    out["create-tls-bad"] = create("r", {"tls": {"secretRef": {"name": "Bad_TLS"}, "plaintextPort": 6379}})
    out["create-tls-low"] = create("r", {"tls": {"secretRef": {"name": ""}, "plaintextPort": 1000}})
    out["create-tls-high"] = create("r", {"tls": {"secretRef": {"name": "t"}, "plaintextPort": 60000}})
    out["create-tls-exporter-port"] = create("r", {"exporter": {}, "tls": {"secretRef": {"name": "t"}, "plaintextPort": 9121}})
    out["update-tls-added-replicated"] = update("r", repl | {"tls": {"secretRef": {"name": "t"}}}, repl)
    out["update-tls-removed-replicated"] = update("r", repl, repl | {"tls": {"secretRef": {"name": "t"}}})
    out["update-tls-added-single"] = update("r", repl | {"replicas": 1, "tls": {"secretRef": {"name": "t"}}}, repl)
    out["update-tls-secret-renamed"] = update("r", {"tls": {"secretRef": {"name": "new"}}}, {"tls": {"secretRef": {"name": "old"}}})
    # spec.acl
    good_rules = ["~cache:* +@read", "on ~* &* +@all", "%R~cache:* %W~out:* +get +set",
                  "%RW~x allchannels -@dangerous +client|setname +select|0 -config|set", "resetkeys ~a allkeys",
                  "~a (~b +get) (%R~c +@read)", "off ~app:* &news:* +@read +@write -flushall", "", "+@search -@json +@SEARCH"]
    bad_rules = ["~* ~cache:*", "allkeys %R~x", "&* &news", "%X~a", "%RR~a", "%~a", "+get|", "+@", "get", "(~* ~a)",
                 "reset", "nopass", "resetpass", ">secret", "#abc", "~a (+get", "+get)", "say \"hi\"", "a\u000bb",
                 "x" * 4097, "%r~a %w~b %Rw~c ~d", "%a~b"]
    user = lambda i, name, rules, secret="pw", key=None: {"name": name, "rules": rules,
                                                         "passwordSecretRef": {"name": secret} | ({"key": key} if key is not None else {})}
    out["create-acl-ok"] = create("r", {"auth": {"secretRef": {"name": "s"}}, "acl": {"users": [user(i, f"u{i}", r) for i, r in enumerate(good_rules)]}})
    out["create-acl-bad-rules"] = create("r", {"acl": {"defaultUser": "Disabled", "users": [user(i, f"u{i}", r) for i, r in enumerate(bad_rules)]}})
    out["create-acl-bad-users"] = create("r", {"acl": {"users": [user(0, "app", ""), user(1, "app", ""), user(2, "Default", ""),
                                                                  user(3, "masteruser", ""), user(4, "", ""), user(5, "a b", ""),
                                                                  user(6, "x" * 65, ""), user(7, "ok", "", "Bad", ".."),
                                                                  user(8, "ok2", "", "", "a b")]}})
    out["create-acl-disabled-nobody"] = create("r", {"acl": {"defaultUser": "Disabled"}})
    out["create-acl-too-many"] = create("r", {"auth": {"secretRef": {"name": "s"}}, "acl": {"users": [user(i, f"u{i}", "") for i in range(33)]}})
    locked = {"acl": {"defaultUser": "Disabled", "users": [user(0, "app", "~* +@all")]}}
    out["update-acl-removed-locked"] = update("r", repl, repl | locked)
    out["update-acl-removed-enabled"] = update("r", repl, repl | {"acl": {"users": [user(0, "app", "~* +@all")]}})
    out["update-acl-removed-standalone"] = update("r", {}, locked)
    # spec.config, spec.maxMemoryPercentOfLimit
    out["create-config-ok"] = create("r", {"config": {"maxmemory-policy": "allkeys-lru", "hz": "20", "save": "", "maxmemory-clients": "10%",
                                                      "notify-keyspace-events": "Ex", "shutdown-on-sigterm": "save now", "Timeout": "300",
                                                      "client-output-buffer-limit": "normal 0 0 0", "maxmemory": "100mb", "lfu-log-factor": "+5"}})
    out["create-config-bad"] = create("r", {"config": {
        "no-such-directive": "1", "port": "7000", "tls-cert-file": "/x", "requirepass": "pw", "rename-command": "FLUSHALL x",
        "LOADMODULE": "/m.so", "include": "/etc/x", "user": "bob on", "hash-max-ziplist-entries": "128", "hash-max-listpack-entries": "64",
        "activerehashing": "maybe", "databases": "0", "hz": "ten", "maxmemory": "10xb", "maxmemory-clients": "150%",
        "maxmemory-policy": "lru", "shutdown-on-sigint": "save bogus", "loglevel": "debug verbose", "appendonly": "yes",
        "dir": "/tmp", "proc-title-template": "a\tb", "syslog-ident": "--daemonize", "active-defrag-cycle-min": "101",
        "slaveof": "10.0.0.1 6379", "slave-read-only": "no", "replica-read-only": "yes", "unixsocketperm": "777"}})
    out["create-config-refused-switches"] = create("r", {"config": {"enable-protected-configs": "yes", "Enable-Debug-Command": "local",
                                                                   "enable-module-command": "no", "hz": "20"}})
    out["create-config-appendonly-storage"] = create("r", {"storage": {"size": "1Gi"}, "config": {"appendonly": "yes"}})
    out["create-config-too-many"] = create("r", {"config": {f"x{i}": "1" for i in range(257)}})
    out["create-config-maxmemory-over"] = create("r", {"resources": limits, "config": {"maxmemory": "2gb"}, "maxMemoryPercentOfLimit": 50})
    out["create-config-maxmemory-zero"] = create("r", {"resources": limits, "config": {"maxmemory": "0"}})
    out["create-config-percent-no-limit"] = create("r", {"maxMemoryPercentOfLimit": 70})
    out["create-config-percent-high"] = create("r", {"resources": limits, "maxMemoryPercentOfLimit": 95})
    out["create-config-percent-bad"] = create("r", {"maxMemoryPercentOfLimit": 0})
    # spec.service and the Redis's name as its Services need it
    out["create-service-lb"] = create("r", {"service": {"type": "LoadBalancer", "annotations": {
        "service.beta.kubernetes.io/aws-load-balancer-internal": "true", "myapp.tangx.in/x": "1", "bad key": "2", "Example.COM/Ok": "3"},
        "loadBalancerSourceRanges": ["203.0.113.0/24", " 10.0.0.0/8 ", "bad", "fd00::/129"], "externalTrafficPolicy": "Local"}})
    out["create-service-clusterip-settings"] = create("r", {"auth": {"secretRef": {"name": "s"}}, "service": {
        "loadBalancerSourceRanges": [], "externalTrafficPolicy": "Cluster"}})
    out["create-service-nodeport-acl"] = create("r", {"acl": {"users": []}, "service": {"type": "NodePort", "loadBalancerSourceRanges": ["10.0.0.0/8"] * 65}})
    out["create-service-big-annotations"] = create("r", {"service": {"annotations": {"a": "x" * (256 * 1024)}}})
    for i, name in enumerate(["1cache", "my.cache", "cache-", "a" * 55, "a" * 60]):
        out[f"create-service-name-{i}"] = create(name, {"service": {"perPod": True}})
        out[f"create-service-name-repl-{i}"] = create(name, repl)
    out["create-generate-name-perpod"] = review("CREATE", {"apiVersion": f"{GROUP}/v1", "kind": "Redis",
                                                             "metadata": {"generateName": "c" * 54 + "-", "namespace": "default"},
                                                             "spec": {"service": {"perPod": True}}})
    out["create-generate-name-upper"] = review("CREATE", {"apiVersion": f"{GROUP}/v1", "kind": "Redis",
                                                            "metadata": {"generateName": "Cache-", "namespace": "default"}, "spec": {}})
    # placement
    node_term = lambda *exprs, fields=(): {"matchExpressions": list(exprs)} | ({"matchFields": list(fields)} if fields else {})
    expr = lambda key, op, *values: {"key": key, "operator": op} | ({"values": list(values)} if values else {})
    out["create-placement-bad"] = create("r", {
        "nodeSelector": {"disktype": "ssd", "bad key": "x", "zone": "not ok"},
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                    node_term(expr("a", "In"), expr("b", "Exists", "x"), expr("c", "Gt", "1", "2"), expr("d", "Lt", "x"),
                              expr("e", "Gt", "+1"), expr("f", "Near", "1"), expr("Bad Key", "In", "v"),
                              fields=[expr("metadata.name", "In", "n1", "n2"), expr("metadata.labels", "Exists"), expr("metadata.name", "In")]),
                    {}]},
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {"weight": 0, "preference": node_term(expr("a", "In", "x"))},
                    {"weight": 101, "preference": {}}]},
            "podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": {"app": "x"}, "matchExpressions": [expr("k", "Exists", "v")]}, "topologyKey": ""},
                {"namespaceSelector": {"matchLabels": {"a": "-"}}, "topologyKey": "bad key"}]},
            "podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 100, "podAffinityTerm": {"labelSelector": {}, "topologyKey": "kubernetes.io/hostname"}},
                {"weight": -1, "podAffinityTerm": {"topologyKey": "zone"}}]}},
        "tolerations": [{"operator": "Equal", "value": "x"}, {}, {"key": "k", "value": "bad value!"}, {"key": "k", "operator": "Exists", "value": "v"},
                        {"key": "k", "operator": "Gt", "value": "x"}, {"key": "k", "operator": "Lt", "value": "5"},
                        {"key": "k", "operator": "Sometimes"}, {"operator": "Exists", "effect": "NoRun"},
                        {"key": "k", "operator": "Exists", "effect": "NoSchedule", "tolerationSeconds": 30},
                        {"key": "bad key", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 30},
                        {"operator": "Gt", "value": "1"}],
        "topologySpreadConstraints": [
            {"maxSkew": 0, "topologyKey": "", "whenUnsatisfiable": "Sometimes", "minDomains": 0},
            {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "ScheduleAnyway", "minDomains": 2,
             "nodeAffinityPolicy": "Maybe", "nodeTaintsPolicy": "Honor", "labelSelector": {"matchLabels": {"app": "r"}}},
            {"maxSkew": 2, "topologyKey": "zone", "whenUnsatisfiable": "ScheduleAnyway", "labelSelector": {"matchLabels": {"app": "r"}}},
            {"maxSkew": 1, "topologyKey": "kubernetes.io/hostname", "whenUnsatisfiable": "DoNotSchedule", "minDomains": 3}],
        "priorityClassName": "High_Priority",
        "podLabels": {"team": "a", "app": "x", "myapp.tangx.in/role": "primary", "bad key": "v", "ok": "bad value!"},
        "podAnnotations": {"note": "x", "myapp.tangx.in/spec-hash": "h", "Bad Key": "v", "Example.com/ok": "y"}})
    out["create-placement-ok"] = create("r", {"nodeSelector": {"kubernetes.io/os": "linux"},
                                              "tolerations": [{"key": "dedicated", "operator": "Equal", "value": "redis", "effect": "NoSchedule"}],
                                              "priorityClassName": "high", "podLabels": {"team": "a"}, "podAnnotations": {"note": "x"}})
    out["create-placement-empty-terms"] = create("r", {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": []}}}})
    out["create-placement-annotations-big"] = create("r", {"podAnnotations": {"a": "x" * (256 * 1024)}})
    own = {"matchLabels": {"app.kubernetes.io/instance": "r"}}
    out["create-placement-one-node"] = create("r", repl | {
        "nodeSelector": {"kubernetes.io/hostname": "n1"},
        "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                         node_term(expr("kubernetes.io/hostname", "In", "n1", "n2"), expr("kubernetes.io/hostname", "In", "n2", "n3")),
                         node_term(fields=[expr("metadata.name", "In", "n2")])]}},
                     "podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                         {"labelSelector": own, "topologyKey": "kubernetes.io/hostname"},
                         {"labelSelector": own, "topologyKey": "kubernetes.io/hostname", "namespaces": ["other"]},
                         {"labelSelector": own, "topologyKey": "kubernetes.io/hostname", "namespaces": ["default"]},
                         {"labelSelector": {"matchExpressions": [expr("team", "In", "a")]}, "topologyKey": "kubernetes.io/hostname", "namespaceSelector": {}},
                         {"labelSelector": own, "topologyKey": "kubernetes.io/hostname", "namespaceSelector": {"matchLabels": {"a": "b"}}},
                         {"labelSelector": own, "topologyKey": "topology.kubernetes.io/zone"}]}},
        "podLabels": {"team": "a"},
        "topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"}]})
    out["create-placement-two-nodes"] = create("r", repl | {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [node_term(expr("kubernetes.io/hostname", "In", "n1")), node_term(expr("kubernetes.io/hostname", "In", "n2"))]}}}})
    out["update-placement-ratchet"] = update("r", {"replicas": 1, "priorityClassName": "Bad", "nodeSelector": {"bad key": "x"}},
                                             {"replicas": 1, "priorityClassName": "Bad", "nodeSelector": {"other key": "x"}})
    # spec.backup, spec.restore
    dest = {"s3": {"endpoint": "http://10.88.0.1:7070", "bucket": "backups", "credentialsSecretRef": {"name": "s3-credentials"}}}
    out["create-backup-ok"] = create("r", {"backup": {"destination": dest, "schedule": "*/5 * * * *"}})
    out["create-backup-keep-set"] = create("r", {"backup": {"destination": dest, "schedule": "@daily", "keep": 2}})
    out["create-backup-no-schedule"] = create("r", {"backup": {"destination": dest}})
    for i, schedule in enumerate(["0 3 * * MON-FRI", "@hourly", "15,45 */2 1-15 JAN,JUL ?", " 0 0 1 1 * ", "", "* * *", "* * * * * *", "@weekly 1"]):
        out[f"create-backup-schedule-{i}"] = create("r", {"backup": {"destination": dest, "schedule": schedule}})
    for i, endpoint in enumerate(["ftp://x", "http://user:pw@host", "http://host/path", "https://[::1]:9000", "http://host:99999",
                                  "http://[::1", "https://s3.example.com/", "http://host:+80", "http://:80", "http://ho st", "https://h:0"]):
        out[f"create-backup-endpoint-{i}"] = create("r", {"backup": {"destination": {"s3": dest["s3"] | {"endpoint": endpoint}}}})
    out["create-backup-bad"] = create("r", {"backup": {"keep": 0, "destination": {"s3": {
        "endpoint": "http://h", "bucket": "B", "prefix": "/x", "region": "US", "credentialsSecretRef": {"name": "Bad"}}}}})
    for i, (bucket, prefix, region) in enumerate([("ab", "a/./b", "eu-west-3"), ("a..b", "ok/", "x" * 65), ("-ab", "x" * 513, ""),
                                                  ("ab.", "a\nb", "garage")]):
        out[f"create-backup-fields-{i}"] = create("r", {"backup": {"keep": 1001, "destination": {"s3": dest["s3"] | {
            "bucket": bucket, "prefix": prefix, "region": region}}}})
    restores = [{}, {"backupName": "b1", "location": "s3://b/k"}, {"backupName": "B_1"}, {"backupName": "nightly-1"},
                {"location": "s3://backups/ns/r/b1.rdb"}, {"location": "backups/x"}, {"location": "s3://b/k"},
                {"location": "s3://backups//x"}, {"location": "s3://backups/../x"}, {"location": "s3://backups/"}]
    for i, restore in enumerate(restores):
        out[f"create-restore-{i}"] = create("r", {"backup": {"destination": dest}, "restore": restore})
    out["create-restore-no-backup"] = create("r", {"restore": {"location": "s3://backups/x.rdb"}})
    out["update-restore-changed"] = update("r", {"restore": {"backupName": "b2"}}, {"restore": {"backupName": "b1"}})
    out["update-restore-removed"] = update("r", {}, {"restore": {"backupName": "b1"}})
    out["update-restore-same"] = update("r", {"restore": {"backupName": "b1"}}, {"restore": {"backupName": "b1"}})
    # What messages echo of a tenant's strings: cut after 256 characters, control, format and
    # combining characters escaped, quotes and backslashes as they are.
    odd = "a\u001b[31m\u202e\"q\\'e\u0301\u00a0\u0000\t\n"
    out["create-shown-escapes"] = create("r", {"image": odd, "auth": {"secretRef": {"name": odd, "key": odd}},
                                               "podLabels": {odd: odd}, "config": {"maxmemory-policy": odd, odd: "1"},
                                               "storage": {"size": odd}, "acl": {"users": [user(0, "u", "+@" + odd.replace(" ", ""))]}})
    out["create-shown-long"] = create("r", {"image": "x" * 300 + "!", "auth": {"secretRef": {"name": "é" * 300}},
                                            "nodeSelector": {"k": "v" * 300}, "priorityClassName": "\u001b" * 200,
                                            "tolerations": [{"key": "k", "operator": "Exists", "value": "日本" * 200}],
                                            "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                                                {"matchExpressions": [{"key": "k", "operator": "Exists", "values": ["x" * 100] * 50}]}]}}},
                                            "backup": {"destination": {"s3": {"endpoint": "ftp://" + "h" * 400, "bucket": "b" * 300,
                                                                              "credentialsSecretRef": {"name": "s"}}}}})
    out["create-shown-name"] = create("x" * 70, {"service": {"perPod": True}})
    # Everything at once: the order of the rules and of the warnings.
    out["create-every-family"] = create("Every.Family", repl | {
        "replicas": 2, "image": "redis", "storage": {"size": "0"}, "exporter": {"port": 6379},
        "networkPolicy": {"metricsFrom": [{}]}, "tls": {"secretRef": {"name": "t"}, "plaintextPort": 6390},
        "acl": {"users": [user(0, "u", "+@nope"), user(1, "u", "reset")]}, "config": {"nope": "1", "maxmemory": "2gb"},
        "resources": limits, "maxMemoryPercentOfLimit": 99, "service": {"type": "NodePort", "externalTrafficPolicy": "Local"},
        "nodeSelector": {"kubernetes.io/hostname": "n1"}, "priorityClassName": "X",
        "topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"}],
        "backup": {"destination": dest, "schedule": "* *"}, "restore": {}, "podDisruptionBudget": {"maxUnavailable": "150%"}})
    return out


def dump(path, value):
    with open(path, "w") as f:
        json.dump(value, f, separators=(",", ":"))


def write(directory):
    os.makedirs(os.path.join(directory, "check"), exist_ok=True)
    dump(os.path.join(directory, "validate.json"), review("CREATE", redis(
        "my-op-redis", {"replicas": 2, "image": "redis:5-alpine", "port": 8333, "imagePullPolicy": "IfNotPresent"})))
    dump(os.path.join(directory, "mutate.json"), review("CREATE", redis("defaults", {})))
    dump(os.path.join(directory, "update.json"), update_review())
    for name, value in check_reviews().items():
        dump(os.path.join(directory, "check", f"{name}.json"), value)


# ---- check ----

def unescape(token):
    return token.replace("~1", "/").replace("~0", "~")


def apply_patch(doc, ops):
    doc = copy.deepcopy(doc)
    for op in ops:
        tokens = [unescape(t) for t in op["path"].split("/")[1:]]
        if not tokens:
            if op["op"] in ("add", "replace"):
                doc = copy.deepcopy(op["value"])
                continue
            raise ValueError(f"unsupported whole-document op {op}")
        parent = doc
        for t in tokens[:-1]:
            parent = parent[int(t)] if isinstance(parent, list) else parent[t]
        last = tokens[-1]
        kind = op["op"]
        if isinstance(parent, list):
            index = len(parent) if last == "-" else int(last)
            if kind == "add":
                parent.insert(index, copy.deepcopy(op["value"]))
            elif kind == "replace":
                parent[index] = copy.deepcopy(op["value"])
            elif kind == "remove":
                del parent[index]
            else:
                raise ValueError(f"unsupported op {op}")
        else:
            if kind == "add":
                parent[last] = copy.deepcopy(op["value"])
            elif kind == "replace":
                if last not in parent:
                    raise ValueError(f"replace of a missing member: {op}")
                parent[last] = copy.deepcopy(op["value"])
            elif kind == "remove":
                del parent[last]
            else:
                raise ValueError(f"unsupported op {op}")
    return doc


class Client:
    def __init__(self, url, ca_file):
        u = urllib.parse.urlsplit(url)
        context = ssl.create_default_context(cafile=ca_file)
        self.conn = http.client.HTTPSConnection(u.hostname, u.port, context=context)
        self.base = u.path.rstrip("/")

    def post(self, path, body):
        self.conn.request("POST", self.base + path, body=body, headers={"Content-Type": "application/json"})
        resp = self.conn.getresponse()
        data = resp.read()
        if resp.status != 200:
            raise RuntimeError(f"HTTP {resp.status} from {path}: {data[:300]!r}")
        return json.loads(data)


def summary(request, answer):
    """What the API server acts on, from one answer."""
    import base64
    r = answer.get("response") or {}
    status = r.get("status") or {}
    out = {"uid": r.get("uid"), "allowed": bool(r.get("allowed")), "warnings": r.get("warnings") or []}
    if not out["allowed"]:
        details = status.get("details") or {}
        out["status"] = {"code": status.get("code"), "reason": status.get("reason"), "message": status.get("message"),
                         "causes": details.get("causes") or []}
    patch = r.get("patch")
    if patch:
        if r.get("patchType") != "JSONPatch":
            raise RuntimeError(f"patchType {r.get('patchType')!r}")
        ops = json.loads(base64.b64decode(patch))
        out["patched"] = apply_patch(request["request"]["object"], ops)
    else:
        out["patched"] = request["request"]["object"]
    return out


def check(directory, ca_file, reference_url, other_url):
    files = [os.path.join(directory, f) for f in ("validate.json", "mutate.json", "update.json")]
    files += sorted(os.path.join(directory, "check", f) for f in os.listdir(os.path.join(directory, "check")))
    ref, other = Client(reference_url, ca_file), Client(other_url, ca_file)
    failures, compared, denials, patches, warned = [], 0, 0, 0, 0
    for path in files:
        body = open(path, "rb").read()
        request = json.loads(body)
        for endpoint in ("/validate", "/mutate"):
            a = summary(request, ref.post(endpoint, body))
            b = summary(request, other.post(endpoint, body))
            compared += 1
            denials += not a["allowed"]
            patches += a["patched"] != request["request"]["object"]
            warned += bool(a["warnings"])
            if a != b:
                diff = {k: {"reference": a.get(k), "other": b.get(k)} for k in a.keys() | b.keys() if a.get(k) != b.get(k)}
                failures.append(f"{os.path.basename(path)} {endpoint}: {json.dumps(diff, indent=1)[:3000]}")
    if failures:
        sys.exit(f"{len(failures)} of {compared} answers differ:\n" + "\n".join(failures))
    print(f"   same answers to all {compared} reviews ({len(files)} reviews x /validate, /mutate: "
          f"{denials} denials, {patches} patched objects, {warned} with warnings)")


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "write":
        write(sys.argv[2])
    elif len(sys.argv) == 6 and sys.argv[1] == "check":
        check(*sys.argv[2:])
    else:
        sys.exit(__doc__)
