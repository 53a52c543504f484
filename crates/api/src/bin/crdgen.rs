//! Prints the `Redis` CustomResourceDefinition as YAML (`make manifests` writes it to files).

fn main() -> std::process::ExitCode {
    match api::crd::crd_yaml() {
        Ok(yaml) => {
            print!("{yaml}");
            std::process::ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("crdgen: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}
