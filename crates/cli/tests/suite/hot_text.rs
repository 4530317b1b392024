//! `crates/cli/hot-text.ld`, the linker script that gathers the functions a
//! run executes (scripts/hot-text), links with the linkers a release build may
//! use, and its patterns (hashes as `*`) pull matching functions to the front.
//! The tests build a small C program whose functions carry names from the
//! script, as the release link only runs outside the test suite.

use std::path::{Path, PathBuf};
use std::process::Command;

fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("hot-text.ld")
}

/// The first pattern of the script that a C function can be named after
/// (no `$`), as a symbol: its hash filled in.
fn hot_symbol() -> String {
    let text = std::fs::read_to_string(script()).unwrap();
    let pattern = text
        .lines()
        .filter_map(|line| line.trim().strip_prefix("*(.text."))
        .map(|rest| rest.split_whitespace().next().unwrap())
        .find(|p| !p.contains('$') && p.ends_with("17h*E"))
        .expect("a legacy-mangled pattern without `$`");
    pattern.replace('*', "0123456789abcdef")
}

/// Links `main.c` with the script through `cc` (plus `extra` flags), runs the
/// program and returns the section its hot function landed in.
fn link_and_locate(extra: &[String]) -> String {
    let dir = tempfile::tempdir().unwrap();
    let symbol = hot_symbol();
    let source = dir.path().join("main.c");
    std::fs::write(
        &source,
        format!(
            r#"#include <stdio.h>
int cold_one(int x) {{ return x * 3; }}
int hot(int x) __asm__("{symbol}");
int hot(int x) {{ return x + 1; }}
int main(void) {{ printf("%d\n", hot(cold_one(1))); return 0; }}
"#
        ),
    )
    .unwrap();
    let program = dir.path().join("program");
    let out = Command::new("cc")
        .args(["-O1", "-ffunction-sections", "-o"])
        .arg(&program)
        .arg(&source)
        .arg(format!("-Wl,-T,{}", script().display()))
        .args(extra)
        .output()
        .expect("cc runs");
    assert!(
        out.status.success(),
        "link failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let run = Command::new(&program).output().unwrap();
    assert_eq!(String::from_utf8_lossy(&run.stdout), "4\n");

    // Which section holds the hot function: compare its address with the
    // section table.
    let symbols = Command::new("nm").arg(&program).output().unwrap();
    let symbols = String::from_utf8_lossy(&symbols.stdout);
    let address = symbols
        .lines()
        .find(|l| l.ends_with(&symbol))
        .and_then(|l| u64::from_str_radix(l.split_whitespace().next()?, 16).ok())
        .expect("the hot function's symbol");
    let sections = Command::new("readelf")
        .args(["-SW"])
        .arg(&program)
        .output()
        .unwrap();
    let sections = String::from_utf8_lossy(&sections.stdout);
    for line in sections.lines() {
        let fields: Vec<&str> = line
            .trim_start_matches(|c: char| c == ' ' || c == '[' || c.is_ascii_digit() || c == ']')
            .split_whitespace()
            .collect();
        if fields.len() < 5 || !fields[0].starts_with(".text") {
            continue;
        }
        let (Ok(start), Ok(size)) = (
            u64::from_str_radix(fields[2], 16),
            u64::from_str_radix(fields[4], 16),
        ) else {
            continue;
        };
        if (start..start + size).contains(&address) {
            return fields[0].to_owned();
        }
    }
    panic!("no text section holds {address:#x}:\n{sections}");
}

#[test]
fn hot_functions_go_first_with_the_systems_linker() {
    assert_eq!(link_and_locate(&[]), ".text.hot");
}

#[test]
fn hot_functions_go_first_with_rusts_lld() {
    // Rust's own linker on x86_64 Linux, as a release build runs it.
    let sysroot = Command::new("rustc")
        .args(["--print", "sysroot"])
        .output()
        .unwrap();
    let sysroot = String::from_utf8_lossy(&sysroot.stdout).trim().to_owned();
    let host = Command::new("rustc").args(["-vV"]).output().unwrap();
    let host = String::from_utf8_lossy(&host.stdout)
        .lines()
        .find_map(|l| l.strip_prefix("host: ").map(str::to_owned))
        .unwrap();
    let gcc_ld = Path::new(&sysroot).join(format!("lib/rustlib/{host}/bin/gcc-ld"));
    assert!(gcc_ld.join("ld.lld").exists(), "no rust-lld in {gcc_ld:?}");
    let flags = [format!("-B{}", gcc_ld.display()), "-fuse-ld=lld".to_owned()];
    assert_eq!(link_and_locate(&flags), ".text.hot");
}
