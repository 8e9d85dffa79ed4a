//! Records the git commit the binary was built from, so every stored run
//! says which tcplab made it (issue 30, rule 8: methods a reader can rerun
//! from). Outside a git checkout the commit is "unknown".

use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

fn main() {
    let commit = git(&["rev-parse", "--short=12", "HEAD"]).unwrap_or_else(|| "unknown".into());
    println!("cargo:rustc-env=TCPLAB_GIT_COMMIT={commit}");
    // A new commit moves HEAD or the branch it names.
    if let Some(dir) = git(&["rev-parse", "--absolute-git-dir"]) {
        println!("cargo:rerun-if-changed={dir}/HEAD");
        if let Some(r) = git(&["symbolic-ref", "-q", "HEAD"]) {
            println!("cargo:rerun-if-changed={dir}/{r}");
        }
        println!("cargo:rerun-if-changed={dir}/packed-refs");
    }
}
