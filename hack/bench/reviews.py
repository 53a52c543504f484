#!/usr/bin/env python3
"""AdmissionReviews for `make bench-webhook`, and the check that two webhooks answer them alike.

  reviews.py write DIR
      DIR/validate.json     CREATE of the tutorial's my-op-redis (nothing to default, no warning)
      DIR/mutate.json       CREATE with an empty spec (four defaults to add)
      DIR/update.json       UPDATE as kube-apiserver sends it for `kubectl apply` scaling a
                            Replication-mode Redis from 3 to 5 (~6 KiB: object and oldObject with
                            managedFields of kubectl, the controller and `kubectl scale`, labels,
                            a last-applied-configuration, status); sent to /validate and /mutate
      DIR/check/*.json      more reviews covering every rule (denials, warnings, the update
                            ratchet, DELETE protection, redis/scale, defaults of nested fields)

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
    out["other-kind"] = review("CREATE", {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}},
                               kind={"group": "", "version": "v1", "kind": "Pod"},
                               resource={"group": "", "version": "v1", "resource": "pods"})
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
