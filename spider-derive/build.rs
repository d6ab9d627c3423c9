//! Writes the settings' table of keys as Markdown, for the derive's documentation.

fn main() {
    let out = std::env::var_os("OUT_DIR").map(std::path::PathBuf::from).unwrap_or_default();
    if let Err(error) = std::fs::write(out.join("keys.md"), spider_settings::markdown()) {
        println!("cargo::error=cannot write the table of keys: {error}");
    }
    println!("cargo::rerun-if-changed=build.rs");
}
