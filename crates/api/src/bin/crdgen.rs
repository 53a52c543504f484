//! Prints the CustomResourceDefinitions as YAML (`make manifests` writes them to files): every
//! one as a multi-document YAML, or with an argument the one of that stem (`crdgen redisbackup`).

fn main() -> std::process::ExitCode {
    let rendered = match std::env::args().nth(1) {
        None => api::crd::all_crds_yaml().map(Some),
        Some(stem) => api::crd::crd_yaml(&stem),
    };
    match rendered {
        Ok(Some(yaml)) => {
            print!("{yaml}");
            std::process::ExitCode::SUCCESS
        }
        Ok(None) => {
            eprintln!(
                "crdgen: no CRD named that; known: {}",
                api::crd::stems().join(", ")
            );
            std::process::ExitCode::FAILURE
        }
        Err(e) => {
            eprintln!("crdgen: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}
