//! Link options for the `zot` binary.

fn main() {
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    let env = std::env::var("CARGO_CFG_TARGET_ENV").unwrap_or_default();
    // Relative relocations packed as DT_RELR (glibc 2.36+, binutils 2.38+, lld):
    // zot is a position-independent executable whose vtables and string tables
    // hold tens of thousands of pointers, and as classic RELA entries (24 bytes
    // each) they made a 0.6 MiB table that the dynamic loader reads at every
    // start, into resident memory; packed they take a few KiB (the performance
    // issue: binary size and start-up memory).
    if os == "linux" && env == "gnu" {
        println!("cargo::rustc-link-arg-bins=-Wl,-z,pack-relative-relocs");
        // The code a run executes, gathered at the front of the text
        // (scripts/hot-text writes the list): the kernel maps code 64 KiB
        // at a time: spread out, the 1.4 MB a bare `-p` run executed made
        // 6.6 MiB of text resident; gathered, 3.1 MiB. Release builds only:
        // a debug build's functions are other ones, and its link stays quick.
        if let (Ok("release"), Ok(dir)) = (
            std::env::var("PROFILE").as_deref(),
            std::env::var("CARGO_MANIFEST_DIR"),
        ) {
            println!("cargo::rustc-link-arg-bins=-Wl,-T,{dir}/hot-text.ld");
        }
    }
    println!("cargo::rerun-if-changed=hot-text.ld");
    println!("cargo::rerun-if-changed=build.rs");
}
