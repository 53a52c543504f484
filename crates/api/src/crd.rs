//! The CustomResourceDefinitions, generated from the Rust types (never hand-edited).
//! `crdgen` prints them; `make manifests` writes each to the chart's `crds/` and all of them to
//! `deploy/crd.yaml`.

use crate::Error;
use crate::backup::RedisBackup;
use crate::types::Redis;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::CustomResourceExt;

/// Where the chart keeps each CRD, as `<stem>.yaml` (helm installs them before anything else).
pub const CHART_CRD_DIR: &str = "charts/redis-operator/crds";
/// The one file holding every CRD, for `kubectl apply -f deploy/crd.yaml`.
pub const DEPLOY_CRD_PATH: &str = "deploy/crd.yaml";

const HEADER: &str = "# Generated from crates/api by `make manifests` (cargo run -p api --bin crdgen). Do not edit.\n";

/// Every CRD the operator serves, by the file stem of its copy in [`CHART_CRD_DIR`].
pub fn crds() -> Vec<(&'static str, CustomResourceDefinition)> {
    vec![("redis", Redis::crd()), ("redisbackup", RedisBackup::crd())]
}

/// The stems [`crds`] knows.
pub fn stems() -> Vec<&'static str> {
    crds().into_iter().map(|(stem, _)| stem).collect()
}

/// One CRD as YAML (`None`: no CRD has that stem), with a header saying where it comes from.
pub fn crd_yaml(stem: &str) -> Result<Option<String>, Error> {
    let Some((_, crd)) = crds().into_iter().find(|(s, _)| *s == stem) else {
        return Ok(None);
    };
    let body = serde_norway::to_string(&crd).map_err(Error::RenderCrd)?;
    Ok(Some(format!("{HEADER}{body}")))
}

/// Every CRD as one multi-document YAML ([`DEPLOY_CRD_PATH`]).
pub fn all_crds_yaml() -> Result<String, Error> {
    let bodies = crds()
        .iter()
        .map(|(_, crd)| serde_norway::to_string(crd).map_err(Error::RenderCrd))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(format!("{HEADER}{}", bodies.join("---\n")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;
    use std::path::PathBuf;

    fn crd_json() -> Value {
        serde_json::to_value(Redis::crd()).expect("crd encodes")
    }

    #[test]
    fn names_scope_and_categories_are_as_designed() {
        let crd = crd_json();
        assert_eq!(crd["metadata"]["name"], "redis.myapp.tangx.in");
        let spec = &crd["spec"];
        assert_eq!(spec["group"], "myapp.tangx.in");
        assert_eq!(spec["scope"], "Namespaced");
        assert_eq!(spec["names"]["kind"], "Redis");
        assert_eq!(spec["names"]["plural"], "redis");
        assert_eq!(spec["names"]["shortNames"], serde_json::json!(["rds"]));
        assert_eq!(spec["names"]["categories"], serde_json::json!(["all"]));
    }

    #[test]
    fn schema_carries_the_tutorial_bounds_and_descriptions() {
        let crd = crd_json();
        let version = &crd["spec"]["versions"][0];
        assert_eq!(version["name"], "v1");
        let props = &version["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"];
        assert_eq!(props["port"]["minimum"].as_f64(), Some(1234.0));
        assert_eq!(props["port"]["maximum"].as_f64(), Some(54321.0));
        assert_eq!(props["replicas"]["minimum"].as_f64(), Some(0.0));
        // The hard ceiling the API server keeps even when the webhook is bypassed.
        assert_eq!(
            props["replicas"]["maximum"].as_f64(),
            Some(f64::from(crate::schema::SCHEMA_MAX_REPLICAS))
        );
        assert_eq!(props["image"]["minLength"], 1);
        let policies = props["imagePullPolicy"]["enum"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        for policy in ["Always", "IfNotPresent", "Never"] {
            assert!(
                policies.contains(&policy.into()),
                "{policy} missing from {policies:?}"
            );
        }
        for field in [
            "replicas",
            "image",
            "port",
            "imagePullPolicy",
            "resources",
            "nodeSelector",
            "affinity",
            "tolerations",
            "topologySpreadConstraints",
            "priorityClassName",
            "podLabels",
            "podAnnotations",
        ] {
            let description = props[field]["description"].as_str().unwrap_or_default();
            assert!(
                description.len() > 20,
                "spec.{field} needs a description for kubectl explain"
            );
        }
        // A field of a core/v1 type is described by its own doc, not by the type's.
        assert!(
            props["affinity"]["description"]
                .as_str()
                .is_some_and(|d| d.starts_with("Scheduling rules of the pods")),
            "{}",
            props["affinity"]["description"]
        );
        // An enum field is described by its field's doc, not by its type's.
        let retention = &props["storage"]["properties"]["retention"]["properties"];
        for (description, says) in [
            (&props["mode"]["description"], "Standalone (the default)"),
            (
                &retention["whenDeleted"]["description"],
                "When the Redis is deleted",
            ),
            (
                &retention["whenScaled"]["description"],
                "When replicas is lowered",
            ),
        ] {
            let description = description.as_str().unwrap_or_default();
            assert!(description.starts_with(says), "{description:?}");
        }
        let required = &version["schema"]["openAPIV3Schema"]["properties"]["spec"]["required"];
        assert!(
            required.is_null() || required == &serde_json::json!([]),
            "spec fields are optional: {required}"
        );
    }

    #[test]
    fn subresources_and_printer_columns_are_present() {
        let crd = crd_json();
        let version = &crd["spec"]["versions"][0];
        assert!(version["subresources"]["status"].is_object());
        let scale = &version["subresources"]["scale"];
        assert_eq!(scale["specReplicasPath"], ".spec.replicas");
        assert_eq!(scale["statusReplicasPath"], ".status.replicas");
        assert_eq!(scale["labelSelectorPath"], ".status.selector");
        let columns: Vec<_> = version["additionalPrinterColumns"]
            .as_array()
            .expect("printer columns")
            .iter()
            .map(|c| {
                (
                    c["name"].as_str().unwrap_or_default(),
                    c["jsonPath"].as_str().unwrap_or_default(),
                )
            })
            .collect();
        assert_eq!(
            columns,
            vec![
                ("Replicas", ".status.replicas"),
                ("Ready", ".status.readyReplicas"),
                ("Image", ".spec.image"),
                ("Port", ".spec.port"),
                ("Primary", ".status.primary"),
                ("Age", ".metadata.creationTimestamp"),
            ]
        );
    }

    #[test]
    fn committed_crd_files_match_the_generated_ones() {
        // The runtime value first: a target dir shared between clones may not recompile this test.
        let manifest_dir = std::env::var_os("CARGO_MANIFEST_DIR")
            .map_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")), PathBuf::from);
        let root = manifest_dir.join("../..");
        let mut expected = vec![(
            DEPLOY_CRD_PATH.to_owned(),
            all_crds_yaml().expect("crds render"),
        )];
        for stem in stems() {
            expected.push((
                format!("{CHART_CRD_DIR}/{stem}.yaml"),
                crd_yaml(stem).expect("crd renders").expect("known stem"),
            ));
        }
        for (path, generated) in expected {
            let committed = std::fs::read_to_string(root.join(&path)).unwrap_or_default();
            assert!(
                committed == generated,
                "{path} differs from the CRD generated from crates/api; run `make manifests` and commit the result"
            );
        }
        let in_chart = std::fs::read_dir(root.join(CHART_CRD_DIR))
            .expect("the chart's crds/")
            .filter_map(|e| e.ok())
            .filter_map(|e| e.file_name().to_str().map(str::to_owned))
            .filter_map(|f| f.strip_suffix(".yaml").map(str::to_owned))
            .filter(|stem| !stems().contains(&stem.as_str()))
            .collect::<Vec<_>>();
        assert!(in_chart.is_empty(), "CRDs no type generates: {in_chart:?}");
    }
}
