//! Records the cargo profile the extension was built with, so benchmarks can say which build
//! they measured (`jetmcp._wire.BUILD`).

fn main() {
    let profile = std::env::var("PROFILE").unwrap_or_else(|_| "?".into());
    let opt = std::env::var("OPT_LEVEL").unwrap_or_else(|_| "?".into());
    let debug_assertions = std::env::var_os("CARGO_CFG_DEBUG_ASSERTIONS").is_some();
    // The profile name itself (release, ci, dev) is not given to build scripts; the output
    // directory ends with it.
    let out = std::env::var("OUT_DIR").unwrap_or_default();
    let name = out
        .split(['/', '\\'])
        .collect::<Vec<_>>()
        .windows(2)
        .find(|w| w[1] == "build")
        .map(|w| w[0].to_owned())
        .unwrap_or(profile);
    println!(
        "cargo:rustc-env=JETMCP_WIRE_BUILD={name} (opt-level {opt}{})",
        if debug_assertions {
            ", debug assertions"
        } else {
            ""
        }
    );
    println!("cargo:rerun-if-changed=rust/build.rs");
}
