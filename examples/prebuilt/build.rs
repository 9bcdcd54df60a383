//! Generate the default kernel set at build time; src/lib.rs embeds it.
fn main() {
    let out = std::path::PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
    if let Err(e) = flashgen::build::generate(&out, &flashgen::plan::default_set()) {
        panic!("flashgen kernel generation failed: {e}");
    }
    println!("cargo:rerun-if-changed=build.rs");
}
