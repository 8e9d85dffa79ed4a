//! The place every stack-end test runs in: a StackPlace, or a skip (with
//! why) where this host cannot build one.

use stackend::StackPlace;

/// A place for the stack's trials, or None with the reason printed (no
/// root, no TUN): the calling test then passes as skipped, and says so.
pub fn place() -> Option<StackPlace> {
    match StackPlace::build() {
        Ok(p) => Some(p),
        Err(e) => {
            eprintln!("skipped: cannot build the stack's place here: {e}");
            None
        }
    }
}
