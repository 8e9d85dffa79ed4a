//! Compiles the BPF programs with clang and generates their libbpf-rs
//! skeleton into OUT_DIR.
use libbpf_cargo::SkeletonBuilder;
use std::env;
use std::path::PathBuf;

/// Each BPF source and the skeleton generated from it.
const PROGRAMS: [(&str, &str); 2] = [
    ("src/bpf/path.bpf.c", "path.skel.rs"),
    ("src/bpf/profile.bpf.c", "profile.skel.rs"),
];

fn main() {
    let out_dir = PathBuf::from(env::var_os("OUT_DIR").expect("OUT_DIR"));
    let arch = match env::var("CARGO_CFG_TARGET_ARCH").as_deref() {
        Ok("x86_64") => "x86",
        Ok("aarch64") => "arm64",
        Ok("riscv64") => "riscv",
        Ok("powerpc64") => "powerpc",
        Ok("s390x") => "s390",
        Ok(other) => panic!("no BPF target mapping for architecture {other}"),
        Err(_) => "x86",
    };
    for (src, skel) in PROGRAMS {
        build(src, &out_dir.join(skel), arch);
    }
    println!("cargo:rerun-if-changed=src/bpf");
}

fn build(src: &str, out: &std::path::Path, arch: &str) {
    SkeletonBuilder::new()
        .source(src)
        .clang_args([
            format!("-D__TARGET_ARCH_{arch}"),
            "-Isrc/bpf".to_string(),
            // BPF ISA v3 (Linux 5.1+): 32-bit jumps and ALU, smaller programs.
            "-mcpu=v3".to_string(),
            "-Wall".to_string(),
            "-Wno-unused-function".to_string(),
        ])
        .build_and_generate(out)
        .unwrap_or_else(|e| {
            panic!("building {src} failed (needs clang; scripts/setup-debian installs it): {e:#}")
        });
}
