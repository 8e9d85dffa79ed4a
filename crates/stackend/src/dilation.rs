//! A slower CPU on a stack end (`--cpu-speed`, issue 29): which end runs
//! at which speed, what cannot be slowed (refused), and the application's
//! own work (`--recv-work`), which runs at the compute class's speed.

use crate::error::StackEndError;
use record::factor::{Account, ClassSpeeds, Layers, WorkClass};
use record::TrialParams;
use stack::account::Speeds;

/// The speeds of the end that sends (`sends`) or receives the trial's
/// data, as the stack's accountant takes them; `None` at full speed.
pub fn speeds_of(p: &TrialParams, sends: bool) -> Option<Speeds> {
    let s = p.cpu_speed?.of_side(sends);
    (!s.is_full()).then(|| to_stack(s))
}

fn to_stack(s: ClassSpeeds) -> Speeds {
    Speeds {
        compute: s.of(WorkClass::Compute),
        data: s.of(WorkClass::Data),
        device: s.of(WorkClass::Device),
    }
}

/// The receiver's `--recv-work` per KB on its slower CPU: the work is the
/// application's computation, so it takes 1/F of the compute class's
/// time.
pub fn recv_work_ns_per_kb(p: &TrialParams) -> Option<u64> {
    let ns = p.recv_work_ns_per_kb?;
    let f = p
        .cpu_speed
        .map_or(1.0, |c| c.receiver.of(WorkClass::Compute));
    Some((ns as f64 / f).round() as u64)
}

/// Why trial `p`'s `--cpu-speed` cannot be played, if it cannot: a side
/// slowed on a Linux end (its work is the kernel's), with sampled
/// accounting (a slower CPU owes for every block), or with the device on
/// a thread of its own (whose work is not timed).
pub fn check(p: &TrialParams) -> Result<(), StackEndError> {
    let Some(speed) = p.cpu_speed.filter(|s| !s.is_full()) else {
        return Ok(());
    };
    let unsupported = |what: String| Err(StackEndError::Unsupported(what));
    if matches!(p.account, Some(Account::Sample(_))) {
        return unsupported(
            "--cpu-speed with --account sample:N (a slower CPU owes for every block, so every round is timed: give --account on)".into(),
        );
    }
    if p.layers == Some(Layers::Threaded) {
        return unsupported(
            "--cpu-speed with --layers threaded (the device thread's work is not timed, so it cannot be slowed)".into(),
        );
    }
    let client_sends = engine::metrics::sender_is_client(p);
    for (side, sends, speeds) in [
        ("sender", true, speed.sender),
        ("receiver", false, speed.receiver),
    ] {
        let kind = if sends == client_sends {
            p.stack
        } else {
            p.server_stack
        };
        if !speeds.is_full() && !kind.is_tcplab() {
            return unsupported(format!(
                "--cpu-speed {side}=…: the {side} is a Linux end here, whose work is the kernel's and cannot be slowed by time dilation; give that end tcplab's stack (--stack or --server-stack tcplab)"
            ));
        }
    }
    Ok(())
}
