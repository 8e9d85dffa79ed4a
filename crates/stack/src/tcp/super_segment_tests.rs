use super::super::isn::{FourTuple, IsnGenerator, IsnPolicy};
use super::super::tcb::{Connection, TcpConfig, MAX_SUPER_SEGMENT};
use super::super::window::{SendState, SenderPolicy};
use crate::time::Instant;

const MSS: usize = 1448;

fn connection(sender: SenderPolicy, device_limit: usize) -> Connection {
    let tuple = FourTuple {
        local: "10.0.0.1:40000".parse().unwrap(),
        remote: "10.0.0.2:5001".parse().unwrap(),
    };
    let isn = IsnGenerator::with_secret(IsnPolicy::Rfc6528, [3; 32]);
    let config = TcpConfig {
        sender,
        ..TcpConfig::default()
    };
    let mut c = Connection::open_active(config, tuple, &isn, Instant::ZERO);
    // The peer's MSS 1460 less the 12 bytes of timestamps.
    c.snd_mss = 1460;
    c.ts_ok = true;
    c.allow_super_segments(device_limit);
    c
}

fn state(queued: usize, usable_window: usize, in_flight: usize) -> SendState {
    SendState {
        queued,
        usable_window,
        max_send_window: 1 << 20,
        mss: MSS,
        in_flight,
        push: true,
        override_expired: false,
        fin_queued: false,
    }
}

#[test]
fn without_a_device_that_cuts_every_segment_stays_one_mss() {
    let c = connection(SenderPolicy::default(), 0);
    assert_eq!(c.super_segment_len(MSS, &state(1 << 20, 1 << 20, 0)), MSS);
    assert_eq!(c.super_segment_limit(), MSS);
}

#[test]
fn a_super_segment_is_whole_segments_up_to_the_usable_window() {
    let c = connection(SenderPolicy::default(), MAX_SUPER_SEGMENT);
    // 30,000 usable, more queued: 20 full segments; the 1,040-byte rest
    // waits, as sender SWS avoidance would have it wait.
    assert_eq!(
        c.super_segment_len(MSS, &state(100_000, 30_000, 0)),
        20 * MSS
    );
    // Plenty of window: as many whole segments as 64 KB holds.
    let max = MAX_SUPER_SEGMENT / MSS * MSS;
    assert_eq!(c.super_segment_len(MSS, &state(1 << 20, 1 << 20, 0)), max);
    assert_eq!(max, 45 * MSS);
    // A first segment below one MSS stays alone.
    assert_eq!(c.super_segment_len(500, &state(500, 1 << 20, 0)), 500);
}

#[test]
fn the_small_tail_joins_only_where_nagle_would_send_it() {
    // 10,000 bytes, all of them fit: six full segments and 1,312 more.
    let nagle = connection(SenderPolicy::default(), MAX_SUPER_SEGMENT);
    assert_eq!(
        nagle.super_segment_len(MSS, &state(10_000, 1 << 20, 0)),
        6 * MSS
    );
    let no_nagle = SenderPolicy {
        nagle: false,
        ..SenderPolicy::default()
    };
    let c = connection(no_nagle, MAX_SUPER_SEGMENT);
    assert_eq!(c.super_segment_len(MSS, &state(10_000, 1 << 20, 0)), 10_000);
}

#[test]
fn the_config_bounds_the_device_and_counters_count_wire_segments() {
    let mut c = connection(SenderPolicy::default(), MAX_SUPER_SEGMENT);
    c.config.max_super_segment = 10_000;
    c.allow_super_segments(MAX_SUPER_SEGMENT);
    assert_eq!(
        c.super_segment_len(MSS, &state(1 << 20, 1 << 20, 0)),
        6 * MSS
    );
    c.count_segments_out(45 * MSS);
    c.count_segments_out(10 * MSS + 1);
    c.count_segments_out(MSS);
    c.count_segments_out(0);
    let counters = c.counters();
    assert_eq!(counters.super_segments_out, 2);
    assert_eq!(counters.segments_out, 45 + 11 + 1 + 1);
}
