//! How a server's wait on a running trial ends: the trial's wall-clock
//! cap, what the wait found, and joining the trial's threads once told to
//! finish.

use crate::cancel::Canceller;
use crate::report::SideReport;
use crate::server_budget::Budget;
use crate::watch::{poll_control, ControlEvent};
use crate::workloads::RunningRole;
use std::net::TcpStream;
use std::os::fd::AsFd;
use std::time::{Duration, Instant};

/// When a trial must end: the wall-clock cap of the server (or the key).
#[derive(Clone, Copy)]
pub(crate) struct Cap {
    pub(crate) by: Instant,
    pub(crate) max_trial_s: f64,
}

impl Cap {
    /// Why a trial that ran past the cap was cancelled.
    pub(crate) fn over(self) -> String {
        format!(
            "the trial ran past the server's limit ({} s at most, or 3 × --duration + 30 s)",
            self.max_trial_s
        )
    }
}

/// How a trial's wait ended.
pub(crate) enum Wait {
    /// The trial ended normally: report it.
    Done,
    /// The control connection is gone.
    Lost,
    /// The trial must be cancelled, for this reason (told to the client).
    Abort(String),
}

/// Joins a role that was told to finish, cancelling it if its threads have
/// not ended within `grace` (a client that keeps its data connections open
/// after `client_done`) or as soon as the client hangs up. The trial's
/// budget is still held meanwhile, and once more when its threads have
/// ended (a trial shorter than the watch's first look is held too): over
/// it, the reason instead of the report.
pub(crate) fn join_within(
    s: &TcpStream,
    role: RunningRole,
    cancel: &Canceller,
    grace: Duration,
    mut budget: Budget,
) -> Result<SideReport, String> {
    let until = Instant::now() + grace;
    let mut looked = Instant::now();
    while !role.is_finished() && Instant::now() < until {
        if looked.elapsed() >= BUDGET_LOOK {
            looked = Instant::now();
            if let Some(why) = budget.over() {
                cancel.cancel();
                role.join();
                return Err(why);
            }
        }
        // A client that leaves (one that said client_done without ever
        // connecting its data) ends the wait at once; a message waiting
        // stays unread until the report (polling again would spin).
        match poll_control(s.as_fd(), Duration::from_millis(20)) {
            ControlEvent::Hangup => {
                cancel.cancel();
                break;
            }
            ControlEvent::Readable => std::thread::sleep(Duration::from_millis(20)),
            ControlEvent::Quiet => {}
        }
    }
    if !role.is_finished() {
        cancel.cancel();
    }
    let report = role.join();
    match budget.over() {
        Some(why) => Err(why),
        None => Ok(report),
    }
}

/// How often the budget is looked at while the threads finish.
const BUDGET_LOOK: Duration = Duration::from_millis(100);
