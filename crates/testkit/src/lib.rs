//! What every tcplab test crate shares to stay honest.
//!
//! - [`skip`]: the one way a test says it cannot run here. A skip is for a
//!   missing precondition only (not root, no kernel feature, no tool); it
//!   is printed past the test harness's capture and recorded, and under
//!   `TCPLAB_REQUIRE_ALL=1` (CI) it fails the test, naming what is missing.
//!   An error while setting up is never a skip: the test fails with it.
//! - [`serial`]: one lock shared by every test binary, held by the tests
//!   that time real transfers, so two of them never measure each other.
//! - [`contention`]: how much of the host's CPU others (other processes,
//!   the hypervisor) took while a measurement ran.
//! - [`quiet`]: a measurement repeated until it ran quietly enough, and a
//!   failure naming the contention when it never did.
//! - [`tcpdump`]: a capture of one device in a namespace, read back as
//!   TCP packets with their wire times.
//!
//! A dev-dependency only: no tcplab library or binary links it.

pub mod contention;
pub mod quiet;
pub mod serial;
pub mod skip;
pub mod tcpdump;

pub use contention::{Contention, Window};
pub use quiet::{until_quiet, Quiet, QuietLimits, OTHERS_TICKS_ALLOWED};
pub use serial::{hold_for_this_test, timing_lock, TimingLock};
pub use skip::{is_root, need, need_path, need_root, need_tool, require_all, skip};
