//! The place every stack-end test runs in: a StackPlace, or a skip
//! (through testkit) where this host lacks what one needs.

use stackend::StackPlace;

/// Whether this host has what a StackPlace needs (root, the TUN driver,
/// iproute2's `ip`); each one missing is a skip through testkit.
pub fn can_build() -> bool {
    testkit::need_root("a network namespace and TUN devices")
        && testkit::need_path("/dev/net/tun", "the TUN driver")
        && testkit::need_tool("ip")
}

/// A place for the stack's trials, or `None` where this host lacks what
/// one needs (the test is skipped, and fails under
/// `TCPLAB_REQUIRE_ALL=1`). With all of it here, a place that cannot be
/// built fails the test with the reason.
pub fn place() -> Option<StackPlace> {
    if !can_build() {
        return None;
    }
    // A place carries a test's trials: the test is serialized with every
    // timed test of the workspace until it ends.
    testkit::hold_for_this_test();
    Some(StackPlace::build().unwrap_or_else(|e| panic!("building the stack's place: {e}")))
}
